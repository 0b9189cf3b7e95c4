package durjson_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/durjson"
)

type stamp struct{ at time.Time }

func (s stamp) MarshalJSON() ([]byte, error) { return json.Marshal(s.at.UTC().Format(time.RFC3339)) }

type inner struct {
	Took   time.Duration   `json:"took"`
	Skip   string          `json:"-"`
	Empty  string          `json:"empty,omitempty"`
	Waits  []time.Duration `json:"waits"`
	Raw    []byte          `json:"raw"`
	When   stamp           `json:"when"`
	NoTag  int
	hidden int
}

// Durations anywhere in a value are written as Go duration strings, and
// everything else exactly as encoding/json writes it.
func TestMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		in   any
		want string
	}{
		"bare duration":  {in: 1500 * time.Millisecond, want: `"1.5s"`},
		"map sorted":     {in: map[string]any{"b": 250 * time.Millisecond, "a": 3}, want: `{"a":3,"b":"250ms"}`},
		"nil map":        {in: map[string]any(nil), want: `null`},
		"nil pointer":    {in: (*inner)(nil), want: `null`},
		"int-keyed map":  {in: map[int]time.Duration{1: time.Second}, want: `{"1":1000000000}`},
		"struct by tags": {in: inner{Took: 5 * time.Second, Skip: "x", Waits: []time.Duration{time.Minute}, Raw: []byte("hi"), When: stamp{at}, NoTag: 7, hidden: 1}, want: `{"took":"5s","waits":["1m0s"],"raw":"aGk=","when":"2026-12-04T10:00:00Z","NoTag":7}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := durjson.Marshal(tc.in)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
			require.True(t, json.Valid(got))
		})
	}
}
