package daemon

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A replica whose clock a test shifted says so once, in a WARN line that
// names the offset and the variable that set it; one without the hook
// logs nothing and passes the store nothing more.
func TestHostClockOffsetIsLogged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []Option
		want  string // the log; empty for none
		store int    // store options passed on
	}{
		{name: "unset"},
		{name: "30s fast", opts: []Option{WithHostClockOffset(30 * time.Second)}, store: 1,
			want: `level=WARN msg="test hook: this replica's host clock is shifted by 30s (RUNBOT_TEST_CLOCK_OFFSET)"` + "\n"},
		{name: "30s slow", opts: []Option{WithHostClockOffset(-30 * time.Second)}, store: 1,
			want: `level=WARN msg="test hook: this replica's host clock is shifted by -30s (RUNBOT_TEST_CLOCK_OFFSET)"` + "\n"},
		{name: "set to zero", opts: []Option{WithHostClockOffset(0)}, store: 1,
			want: `level=WARN msg="test hook: this replica's host clock is shifted by 0s (RUNBOT_TEST_CLOCK_OFFSET)"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o runOptions
			for _, opt := range tc.opts {
				opt(&o)
			}
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			}))
			require.Len(t, o.storeOptions(log), tc.store)
			require.Equal(t, tc.want, buf.String())
		})
	}
}
