package checks

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/runbot/runbot/internal/argspec"
)

// readReported asks the running server which value of the flag's setting
// is in effect, and returns an evidence line. The command line is not the
// whole truth: SGLang also reads settings from a --config file and forces
// some off itself (the overlap schedule under speculative decoding or
// pipeline parallelism), and reports the result in /server_info. A report
// that cannot be read is part of the observation, never a failed step:
// the command line still stands.
func (o *FlagOutput) readReported(ctx context.Context, env Env, args argspec.Values) string {
	path, key := args.String("reported_path"), args.String("reported_key")
	if path == "" || key == "" {
		return ""
	}
	if env.Target.URL == "" {
		o.ReportedError = "the target has no URL in the inventory"
		return "server report: " + o.ReportedError
	}
	dial, err := probeDialer(ctx, env, "target")
	if err != nil {
		o.ReportedError = err.Error()
		return "server report: " + o.ReportedError
	}
	limit := args.Duration("reported_timeout")
	p := probe{method: http.MethodGet, expect: http.StatusOK, dial: dial, maxBody: 4 << 20,
		connectLimit: limit, firstLimit: limit, totalLimit: limit}
	ask := func(path string) (HTTPProbeOutput, error) {
		path = "/" + strings.TrimLeft(path, "/")
		p.url, p.display, p.requestID = strings.TrimRight(env.Target.URL, "/")+path, path, newRequestID()
		out, _, err := p.observe(ctx, env)
		return out, err
	}
	out, err := ask(path)
	if fb := args.String("reported_fallback_path"); err == nil && out.Status == http.StatusNotFound && fb != "" {
		out, err = ask(fb)
	}
	switch {
	case err != nil:
		o.ReportedError = err.Error()
	case !out.OK:
		o.ReportedError = probeEvidence(p, out)
	default:
		re := regexp.MustCompile(`"` + regexp.QuoteMeta(key) + `"\s*:\s*(true|false)\b`)
		if m := re.FindStringSubmatch(out.Body); m != nil {
			o.Reported, o.ReportedFrom = m[1], out.URL
			return fmt.Sprintf("%s reports %s: %s", p.display, key, m[1])
		}
		o.ReportedError = fmt.Sprintf("%s answered without a boolean %q", p.display, key)
	}
	return "server report: " + o.ReportedError
}
