package sqlapi

import (
	"strconv"

	"github.com/svc-code/svc-code/libs/protocol"
)

// Result formats, chosen by the query parameter format.
const (
	FormatJSON = "json"
	FormatTSV  = "tsv"
)

// encoder writes one result format piece by piece, so that a result is
// never held whole: head (the columns), one row at a time, then the tail
// (the count, or the error that cut the result short).
type encoder interface {
	contentType() string
	head(dst []byte, cols []column) []byte
	// row appends one row; first tells whether it is the first.
	row(dst []byte, cols []column, vals [][]byte, first bool, scratch []byte) ([]byte, []byte)
	tail(dst []byte, count int64, cut *protocol.Error) []byte
}

// jsonEncoder writes {"columns":[...],"rows":[[...],...],"count":N}; a
// result cut short ends with the error envelope's members after count:
// ...,"count":N,"error":"INTERRUPT","message":"..."}.
type jsonEncoder struct{}

var _ encoder = jsonEncoder{}

func (jsonEncoder) contentType() string { return "application/json" }

func (jsonEncoder) head(dst []byte, cols []column) []byte {
	dst = append(dst, `{"columns":[`...)
	for i := range cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, []byte(cols[i].name))
	}
	return append(dst, `],"rows":[`...)
}

func (jsonEncoder) row(dst []byte, cols []column, vals [][]byte, first bool, scratch []byte) ([]byte, []byte) {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, '[')
	for i := range cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		scratch = cols[i].appendValue(scratch[:0], vals[i])
		dst = appendJSONString(dst, scratch)
	}
	return append(dst, ']'), scratch
}

func (jsonEncoder) tail(dst []byte, count int64, cut *protocol.Error) []byte {
	dst = append(dst, `],"count":`...)
	dst = strconv.AppendInt(dst, count, 10)
	if cut != nil {
		dst = append(dst, `,"error":`...)
		dst = appendJSONString(dst, []byte(cut.Code))
		dst = append(dst, `,"message":`...)
		dst = appendJSONString(dst, []byte(cut.Message))
	}
	return append(dst, '}', '\n')
}

// tsvEncoder writes a header row of column names, then one line per row;
// fields are separated by tabs, and backslash, tab, newline and carriage
// return inside a value are written \\, \t, \n and \r. A result cut short
// ends with the trailer line "\!error<TAB>CODE<TAB>message", which no
// row can start with (\! is no escape of ours).
type tsvEncoder struct{}

var _ encoder = tsvEncoder{}

// TSVTrailer starts the line that ends a TSV result cut short.
const TSVTrailer = `\!error`

func (tsvEncoder) contentType() string { return "text/tab-separated-values; charset=utf-8" }

func (tsvEncoder) head(dst []byte, cols []column) []byte {
	for i := range cols {
		if i > 0 {
			dst = append(dst, '\t')
		}
		dst = appendTSV(dst, []byte(cols[i].name))
	}
	return append(dst, '\n')
}

func (tsvEncoder) row(dst []byte, cols []column, vals [][]byte, _ bool, scratch []byte) ([]byte, []byte) {
	for i := range cols {
		if i > 0 {
			dst = append(dst, '\t')
		}
		scratch = cols[i].appendValue(scratch[:0], vals[i])
		dst = appendTSV(dst, scratch)
	}
	return append(dst, '\n'), scratch
}

func (tsvEncoder) tail(dst []byte, _ int64, cut *protocol.Error) []byte {
	if cut == nil {
		return dst
	}
	dst = append(dst, TSVTrailer...)
	dst = append(dst, '\t')
	dst = appendTSV(dst, []byte(cut.Code))
	dst = append(dst, '\t')
	dst = appendTSV(dst, []byte(cut.Message))
	return append(dst, '\n')
}
