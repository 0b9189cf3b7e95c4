package checks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote"
)

// ReadFileOutput is what the read_file check exposes to expressions.
type ReadFileOutput struct {
	Path      string            `expr:"path" json:"path" doc:"the file read"`
	Readable  bool              `expr:"readable" json:"readable" doc:"the file exists and could be read"`
	Problem   string            `expr:"problem" json:"problem" doc:"why it could not be read (no such file, permission denied, not a regular file); empty when readable"`
	Text      string            `expr:"text" json:"text" doc:"the file's content, capped"`
	Truncated bool              `expr:"truncated" json:"truncated" doc:"the file was longer than the cap"`
	Modified  time.Time         `expr:"modified" json:"modified" doc:"when the file was last modified, to the second"`
	Values    map[string]string `expr:"values" json:"values" doc:"named values extracted from the text by the extract patterns; a name whose pattern did not match is absent"`
}

var readFileType = Type{
	Spec: argspec.Spec{
		Name: "read_file",
		Doc: "Reads a file on the target (a config file, /proc/loadavg) and extracts values from it. Over SSH it reads " +
			"through the connection's SFTP subsystem, starting no process per file; where sshd offers none it runs `cat`.",
		Args: []argspec.Arg{
			{Name: "path", Type: argspec.String, Required: true, Doc: "absolute path of the file"},
			{Name: "extract", Type: argspec.RegexMap, Doc: "name -> regular expression; the first capture group (or the whole match) of the first match becomes values.NAME"},
			{Name: "max_bytes", Type: argspec.Int, Default: 64 << 10, Min: 1, Max: 8 << 20, Doc: "bytes of the file kept"},
		},
		Outputs: reflect.TypeFor[ReadFileOutput](),
	},
	Check:   ReadFile{},
	Timeout: 30 * time.Second,
}

// ReadFile is the read_file check.
type ReadFile struct{}

// Plan implements Check.
func (ReadFile) Plan(env Env) []string {
	return []string{fmt.Sprintf("read %s on %s", env.Args.String("path"), hostName(env))}
}

// Run implements Check. A file the host cannot read is an observation
// (readable false, with the reason), not an error: a missing config file
// is often the finding.
func (ReadFile) Run(ctx context.Context, env Env) (step.Result, error) {
	args := readFileType.Spec.WithDefaults(env.Args)
	path := args.String("path")
	if env.Target.Runner == nil {
		return step.Result{}, fmt.Errorf("read %s on %s: no connection to the host", path, env.Target.Name())
	}
	o := ReadFileOutput{Path: path, Values: map[string]string{}}
	f, err := remote.ReadFile(ctx, env.Target.Runner, remote.FileRead{Path: path, Max: args.Int("max_bytes"), ModTime: true})
	var fe *remote.FileError
	switch {
	case errors.As(err, &fe):
		o.Problem = fe.Reason
		return step.Result{Values: o, Evidence: []string{fmt.Sprintf("could not read %s: %s", path, fe.Reason)}}, nil
	case err != nil:
		return step.Result{}, err
	}
	o.Readable, o.Text, o.Truncated, o.Modified = true, string(f.Data), f.Truncated, f.ModTime
	head := fmt.Sprintf("read %s: %d bytes", path, len(f.Data))
	if f.Truncated {
		head += " (cut at the cap)"
	}
	ev := []string{head}
	extract := args.Map("extract")
	for _, name := range slices.Sorted(maps.Keys(extract)) {
		re := regexp.MustCompile(extract[name]) // validated when the runbook was loaded
		m := re.FindStringSubmatch(o.Text)
		if m == nil {
			ev = append(ev, fmt.Sprintf("%s: no match for %s", name, extract[name]))
			continue
		}
		v := m[0]
		if len(m) > 1 {
			v = m[1]
		}
		o.Values[name] = v
		ev = append(ev, fmt.Sprintf("%s = %s", name, v))
	}
	return step.Result{Values: o, Evidence: ev}, nil
}
