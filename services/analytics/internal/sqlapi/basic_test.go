package sqlapi

import (
	"reflect"
	"testing"
)

func TestQueryJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	got := e.query(t, "SELECT id, session_id, cost, started_at, is_error, tags, meta, note FROM probe_turns ORDER BY id")
	want := jsonResult{
		Columns: []string{"id", "session_id", "cost", "started_at", "is_error", "tags", "meta", "note"},
		Rows: [][]string{
			{"1", "s1", "0.0123000000", "2024-05-01T10:00:00.5Z", "false", `["a","b c"]`, `{"k": [1, "x"]}`, "plain"},
			{"2", "s1", "1.5000000000", "2024-05-02T00:00:00Z", "true", "", "", "tab\there\nnew line\\back\rcr"},
			{"3", "s2", "0.0000000000", "2024-05-03T08:30:00Z", "false", "[]", `"str"`, ""},
		},
		Count: 3,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("answer:\ngot  %+v\nwant %+v", got, want)
	}
}
