package codex

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	InputPerMTok       float64 `json:"input_per_mtok"`
	CachedInputPerMTok float64 `json:"cached_input_per_mtok"`
	OutputPerMTok      float64 `json:"output_per_mtok"`
}

// Prices is a price table by model id. The key AnyModel ("*") prices any
// model the table does not name; without it such a model costs 0.
type Prices map[string]Price

// AnyModel is the key of the price of every model a table does not name.
const AnyModel = "*"

// DefaultPrices is the price table used when none is configured (the
// provider-models setting of app-server overrides it per model). Codex
// reports tokens but no cost, so the cost of a turn is computed from these:
// OpenAI's list prices for API use, which a ChatGPT-plan login does not pay.
var DefaultPrices = Prices{
	"gpt-5":         {InputPerMTok: 1.25, CachedInputPerMTok: 0.125, OutputPerMTok: 10},
	"gpt-5-codex":   {InputPerMTok: 1.25, CachedInputPerMTok: 0.125, OutputPerMTok: 10},
	"gpt-5.1":       {InputPerMTok: 1.25, CachedInputPerMTok: 0.125, OutputPerMTok: 10},
	"gpt-5.1-codex": {InputPerMTok: 1.25, CachedInputPerMTok: 0.125, OutputPerMTok: 10},
	"gpt-5-mini":    {InputPerMTok: 0.25, CachedInputPerMTok: 0.025, OutputPerMTok: 2},
	"gpt-5-nano":    {InputPerMTok: 0.05, CachedInputPerMTok: 0.005, OutputPerMTok: 0.4},
	"gpt-4.1":       {InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 8},
	"o3":            {InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 8},
	"o4-mini":       {InputPerMTok: 1.1, CachedInputPerMTok: 0.275, OutputPerMTok: 4.4},
}

// Lookup returns the price of model: its own entry, else "*", and whether
// one was found.
func (ps Prices) Lookup(model string) (Price, bool) {
	if p, ok := ps[model]; ok {
		return p, true
	}
	p, ok := ps[AnyModel]
	return p, ok
}

// Cost is the cost of tokens at price p. Codex's input tokens include the
// cached ones, which are priced apart.
func (p Price) Cost(input, cachedInput, output int64) float64 {
	uncached := max(input-cachedInput, 0)
	return (float64(uncached)*p.InputPerMTok + float64(cachedInput)*p.CachedInputPerMTok +
		float64(output)*p.OutputPerMTok) / 1e6
}
