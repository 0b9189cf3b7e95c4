package checks

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	// The timezone argument names the target host's zone; runbot may run
	// where no zone database is installed.
	_ "time/tzdata"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/sglanglog"
	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote"
)

// LogProgressOutput is what the log_progress check exposes to expressions.
type LogProgressOutput struct {
	Source        string                    `expr:"source" json:"source" doc:"what was read: the unit's journal or a file"`
	Lines         int                       `expr:"lines" json:"lines" doc:"log lines read inside the window"`
	Truncated     bool                      `expr:"truncated" json:"truncated" doc:"the log was longer than max_bytes and its oldest part was not read"`
	Found         bool                      `expr:"found" json:"found" doc:"a progress line was found in what was read"`
	LastProgress  time.Time                 `expr:"last_progress" json:"last_progress" doc:"time of the last progress line (from the SGLang prefix when present, else journald's); zero when none was found"`
	StartedAt     time.Time                 `expr:"started_at" json:"started_at" doc:"when the unit last became active, from its service manager; zero when unknown"`
	SilentSince   time.Time                 `expr:"silent_since" json:"silent_since" doc:"the last progress line of the running process, or, when it logged none, the later of its start and the window's start"`
	GapFrom       string                    `expr:"gap_from" json:"gap_from" doc:"what silent_since is: last_progress, unit_start or window (then gap is a lower bound)"`
	Gap           time.Duration             `expr:"gap" json:"gap" doc:"time since silent_since: measured, never a default; a lower bound when gap_from is window"`
	Stalled       bool                      `expr:"stalled" json:"stalled" doc:"gap is longer than stall_after"`
	Recent        []ProgressLine            `expr:"recent" json:"recent" doc:"progress lines inside the window, oldest first, with their SGLang batch fields: the newest 50, and before them the first line of each second, 300 in all at most"`
	PerMinute     float64                   `expr:"per_minute" json:"per_minute" doc:"progress lines per minute in the 5 minutes before the last one (from the first one inside them): how busy the service was before it went quiet"`
	ProgressLines int                       `expr:"progress_lines" json:"progress_lines" doc:"progress lines inside the window"`
	LastLine      string                    `expr:"last_line" json:"last_line" doc:"the last progress line's message"`
	LastFields    map[string]float64        `expr:"last_fields" json:"last_fields" doc:"fields of the last progress line when it is an SGLang batch line, e.g. last_fields[\"transfer-req\"]"`
	LastByRank    map[string]time.Time      `expr:"last_by_rank" json:"last_by_rank" doc:"last progress line per rank prefix (e.g. \"DP0 TP0\")"`
	LaggingRanks  []string                  `expr:"lagging_ranks" json:"lagging_ranks" doc:"ranks silent for longer than stall_after while other ranks still progress"`
	Patterns      map[string]PatternSummary `expr:"patterns" json:"patterns" doc:"one summary per name in patterns"`
	Echoes        int                       `expr:"echoes" json:"echoes" doc:"pattern occurrences caused by this run's own probes, over all patterns"`
	Unexplained   int                       `expr:"unexplained" json:"unexplained" doc:"pattern occurrences not caused by this run's probes, over all patterns"`
}

// ProgressLine is one progress line as expressions see it.
type ProgressLine struct {
	Time   time.Time          `expr:"time" json:"time" doc:"when it was logged"`
	Ranks  string             `expr:"ranks" json:"ranks" doc:"its rank prefix, e.g. \"DP0 TP0\""`
	Fields map[string]float64 `expr:"fields" json:"fields" doc:"its SGLang batch fields, e.g. fields[\"inflight-req\"]; older names are also given under the newest (transferring-req as inflight-req, prealloc-req as bootstrap-req)"`
}

// maxRecent bounds ProgressLine entries in the output; the newest recentAll
// are all kept, older ones thinned to the first of each second.
const (
	maxRecent = 300
	recentAll = 50
)

// Gap origins, the values of LogProgressOutput.GapFrom.
const (
	GapFromProgress  = "last_progress"
	GapFromUnitStart = "unit_start"
	GapFromWindow    = "window"
)

// PatternSummary counts one named pattern's occurrences inside the window.
type PatternSummary struct {
	// Count collapses the lines of one request: every rank that holds a
	// request logs its failure, so N ranks print N lines naming the same
	// bootstrap room (or rid).
	Count       int       `expr:"count" json:"count" doc:"distinct occurrences: lines naming the same bootstrap room or rid count once"`
	Lines       int       `expr:"lines" json:"lines" doc:"matching lines"`
	Echoes      int       `expr:"echoes" json:"echoes" doc:"occurrences caused by this run's own probes (by request id, or by time inside a cut-short probe's window)"`
	Unexplained int       `expr:"unexplained" json:"unexplained" doc:"occurrences not caused by this run's probes"`
	First       time.Time `expr:"first" json:"first" doc:"time of the first occurrence"`
	Last        time.Time `expr:"last" json:"last" doc:"time of the last occurrence"`
	Rooms       []string  `expr:"rooms" json:"rooms" doc:"distinct bootstrap rooms named, oldest first"`
	Rids        []string  `expr:"rids" json:"rids" doc:"distinct request ids named, oldest first"`
	LastLine    string    `expr:"last_line" json:"last_line" doc:"the last matching line's message, e.g. the startup server_args=ServerArgs(…) dump whose values are in effect"`
}

// Event kinds log_progress records; internal/step says what each carries.
const (
	EventProgress     = step.EventProgress
	EventProgressRate = step.EventProgressRate
	EventStall        = step.EventStall
	EventLogMatch     = step.EventLogMatch
)

var logProgressType = Type{
	Spec: argspec.Spec{
		Name: "log_progress",
		Doc: "Reads a unit's journal (or a log file) and measures the time since the service last logged progress, " +
			"counts named error patterns, and attributes each occurrence either to one of this run's own probes " +
			"(an echo) or to nothing we did (unexplained). The journal is read from window ago; a file's tail may " +
			"reach further back, and a progress line found there still counts.",
		Args: []argspec.Arg{
			{Name: "progress", Type: argspec.Regex, Required: true, Doc: "regular expression for a line that shows work being done, e.g. `Decode batch`"},
			{Name: "stall_after", Type: argspec.Duration, Default: 60 * time.Second, Positive: true, Doc: "a gap since the last progress line longer than this is a stall"},
			{Name: "window", Type: argspec.Duration, Default: 15 * time.Minute, Positive: true, Doc: "how far back to read and count"},
			{Name: "patterns", Type: argspec.RegexMap, Doc: "name -> regular expression of lines to count and attribute, e.g. aborts: `Decode transfer failed.*Aborted`"},
			{Name: "format", Type: argspec.String, Default: FormatAuto, Enum: []string{FormatAuto, FormatJSON, FormatShortISO, FormatPlain}, Doc: "line format of a log file (the journal is always read as json); auto recognises journalctl json and short-iso lines and takes anything else as written by the service"},
			{Name: "unit", Type: argspec.String, Doc: "unit whose journal to read; defaults to the target's unit"},
			{Name: "file", Type: argspec.String, Doc: "log file to read instead of the journal; defaults to the target's log file when the inventory sets one"},
			{Name: "timezone", Type: argspec.String, Default: TimezoneHost, Doc: "zone of the times SGLang prints (host-local time), used only when no journald timestamp accompanies them (plain files): `host` asks the target host for its UTC offset, or an IANA name such as `Europe/Berlin`"},
			{Name: "echo_wait", Type: argspec.Duration, Default: 9 * time.Second, Min: time.Duration(0), Doc: "when a probe this step observed was cut short less than this long ago, wait until it was, so its echo has been logged (SGLang logs a disconnected client's abort 2 to 8 s after it gave up, stamped to the second)"},
			{Name: "echo_grace", Type: argspec.Duration, Default: 10 * time.Second, Min: time.Duration(0), Doc: "how long after a cut-short probe ended a line may still be its echo"},
			{Name: "max_bytes", Type: argspec.Int, Default: 8 << 20, Doc: "most bytes of log read; the newest are kept"},
		},
		Outputs: reflect.TypeFor[LogProgressOutput](),
	},
	Check:   LogProgress{},
	Timeout: time.Minute,
}

// LogProgress is the log_progress check.
type LogProgress struct{}

// Plan implements Check.
func (LogProgress) Plan(env Env) []string {
	args := logProgressType.Spec.WithDefaults(env.Args)
	src, err := logSourceFor(env, args, clock(env)())
	if err != nil {
		return []string{"log_progress: " + err.Error()}
	}
	return []string{fmt.Sprintf("read %s on %s: %s", src.desc, hostName(env), src.line)}
}

// Run implements Check.
func (LogProgress) Run(ctx context.Context, env Env) (step.Result, error) {
	args := logProgressType.Spec.WithDefaults(env.Args)
	// A probe that was cut short a moment ago has its echo still on the
	// way: the server logs the abort only after it notices the disconnect.
	// Waiting that moment out keeps the echo from being missed (and from
	// being miscounted on the next run).
	if d := echoWait(env, args.Duration("echo_wait"), clock(env)()); d > 0 {
		if err := wait(ctx, env, d); err != nil {
			return step.Result{}, fmt.Errorf("wait for echoes of this run's probes: %w", err)
		}
	}
	now := clock(env)()
	src, err := logSourceFor(env, args, now)
	if err != nil {
		return step.Result{}, err
	}
	if env.Target.Runner == nil {
		return step.Result{}, fmt.Errorf("read %s: no connection to %s", src.desc, env.Target.Name())
	}
	zone, err := logZone(ctx, env, args.String("timezone"), src)
	if err != nil {
		return step.Result{}, err
	}
	out, err := env.Target.Runner.Run(ctx, remote.Command{Line: src.line, MaxOutput: src.maxOutput})
	if err != nil {
		return step.Result{}, fmt.Errorf("read %s on %s: %w", src.desc, env.Target.Runner.Host(), err)
	}
	if out.ExitCode != 0 {
		return step.Result{}, fmt.Errorf("read %s on %s: `%s` exited %d: %s", src.desc, env.Target.Runner.Host(), src.line, out.ExitCode, firstLines(string(out.Stderr), 3))
	}
	started, startErr := unitStart(ctx, env, args)
	raw, truncated := src.trim(out)
	format := args.String("format")
	if !src.file {
		format = FormatJSON // the journal is always asked for JSON
	}
	loc, zoneNote := zone.resolve(raw, format, src.reversed)
	entries := parseLog(raw, format, loc, src.reversed)
	a := logAnalysis{
		now: now, since: now.Add(-args.Duration("window")), window: args.Duration("window"),
		stallAfter: args.Duration("stall_after"), grace: args.Duration("echo_grace"),
		progress: regexp.MustCompile(args.String("progress")), progressText: args.String("progress"),
		patterns: compilePatterns(args.Map("patterns")), probes: probeWindows(env.Observed),
		source: src.desc, unitStart: started, unitStartErr: startErr,
	}
	o, events := a.run(entries)
	// Every event names the progress pattern it belongs to, so that two
	// reads of one log (early, and after a probe) make one timeline lane.
	for i := range events {
		if events[i].Labels == nil {
			events[i].Labels = map[string]string{}
		}
		events[i].Labels["progress"] = a.progressText
	}
	o.Truncated = truncated
	ev := a.evidence(o)
	if zoneNote != "" {
		ev = append(ev, zoneNote)
	}
	return step.Result{Values: o, Evidence: ev, Events: events}, nil
}

// unitStart asks the target's service manager when the unit last became
// active. Silence is measured from there when the process has logged no
// progress yet: "no batch since decode started 25 s ago" is evidence, "no
// batch in 15 minutes" about a process that is 25 s old is a made-up number.
func unitStart(ctx context.Context, env Env, args argspec.Values) (time.Time, error) {
	unit := args.String("unit")
	if unit == "" {
		unit = env.Target.Unit
	}
	if unit == "" || env.Target.Services == nil {
		return time.Time{}, nil
	}
	st, err := env.Target.Services.Show(ctx, unit)
	if err != nil {
		return time.Time{}, fmt.Errorf("read start time of %s: %w", unit, err)
	}
	return st.ActiveEnter, nil
}

// echoWait is how long to wait until every cut-short probe this step
// observed ended at least wait ago.
func echoWait(env Env, wait time.Duration, now time.Time) time.Duration {
	var longest time.Duration
	for _, p := range probeWindows(env.Observed) {
		if !p.CutShort {
			continue
		}
		if d := p.End.Add(wait).Sub(now); d > longest {
			longest = d
		}
	}
	return longest
}

func hostName(env Env) string {
	if env.Target.Runner != nil {
		return env.Target.Runner.Host()
	}
	return env.Target.Host
}

// logSource is where and how the log is read.
type logSource struct {
	desc      string
	line      string
	maxOutput int
	// reversed says the lines arrive newest first (journalctl -r, so that
	// the output cap drops the oldest entries, not the newest).
	reversed bool
	file     bool
	path     string // the file, when file
	maxBytes int
}

func logSourceFor(env Env, args argspec.Values, now time.Time) (logSource, error) {
	maxBytes := max(args.Int("max_bytes"), 4096)
	file := args.String("file")
	if file == "" {
		file = env.Target.LogFile
	}
	if file != "" {
		return logSource{
			desc: "log file " + file, file: true, path: file, maxBytes: maxBytes,
			line:      shell.Join("tail", "-c", fmt.Sprint(maxBytes), file),
			maxOutput: maxBytes + 1,
		}, nil
	}
	unit := args.String("unit")
	if unit == "" {
		unit = env.Target.Unit
	}
	if unit == "" {
		return logSource{}, fmt.Errorf("read log of %s: the target has no unit or log file in the inventory and the step sets neither", env.Target.Name())
	}
	since := now.Add(-args.Duration("window"))
	return logSource{
		desc: "journal of " + unit, reversed: true, maxBytes: maxBytes, maxOutput: maxBytes,
		line: shell.Join("journalctl", "-u", unit, "-o", "json", "--output-fields=MESSAGE,SYSLOG_IDENTIFIER,_PID",
			"--since", fmt.Sprintf("@%d", since.Unix()), "--no-pager", "-q", "-r"),
	}, nil
}

// trim returns the complete lines of the output and whether older lines
// were cut off.
func (s logSource) trim(out remote.Output) ([]byte, bool) {
	b := bytes.TrimSuffix(out.Stdout, []byte(remote.TruncationMarker))
	truncated := out.StdoutTruncated
	if s.file && len(b) >= s.maxBytes {
		// tail -c started mid-line; that first line is a fragment.
		truncated = true
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	if truncated && s.reversed {
		// Newest first: the last line is the fragment.
		if i := bytes.LastIndexByte(bytes.TrimRight(b, "\n"), '\n'); i >= 0 {
			b = b[:i+1]
		}
	}
	return b, truncated
}

// logEntry is one parsed log line with its resolved time.
type logEntry struct {
	Time    time.Time
	Ranks   string
	Text    string // the message without SGLang's prefix
	Message string // the whole message
}

// parseLog parses every line and returns them oldest first. A line without
// a time of its own (a traceback, a glog line) takes the time of the line
// before it.
func parseLog(raw []byte, format string, loc *time.Location, reversed bool) []logEntry {
	var recs []logRecord
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if r, ok := parseLogLine(sc.Text(), format); ok {
			recs = append(recs, r)
		}
	}
	if reversed {
		slices.Reverse(recs)
	}
	entries := make([]logEntry, 0, len(recs))
	var prev time.Time
	for _, r := range recs {
		sl := sglanglog.Parse(r.Message)
		t := sglanglog.ResolveTime(sl.Stamp, r.JournalTime, loc)
		if t.IsZero() {
			t = prev
		}
		prev = t
		entries = append(entries, logEntry{Time: t, Ranks: sl.Ranks, Text: sl.Text, Message: r.Message})
	}
	slices.SortStableFunc(entries, func(a, b logEntry) int { return a.Time.Compare(b.Time) })
	return entries
}

type namedPattern struct {
	name string
	re   *regexp.Regexp
}

func compilePatterns(m map[string]string) []namedPattern {
	ps := make([]namedPattern, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		// Validated when the runbook was loaded; cannot fail here.
		ps = append(ps, namedPattern{name, regexp.MustCompile(m[name])})
	}
	return ps
}

func (e logEntry) matches(re *regexp.Regexp) bool {
	return re.MatchString(e.Text) || re.MatchString(e.Message)
}

// logAnalysis is one evaluation of a log against the check's arguments.
type logAnalysis struct {
	now, since   time.Time
	window       time.Duration
	stallAfter   time.Duration
	grace        time.Duration
	progress     *regexp.Regexp
	progressText string
	patterns     []namedPattern
	probes       []probeWindow
	source       string
	unitStart    time.Time
	unitStartErr error
}

// occurrence is one event a pattern stands for: the lines (one per rank)
// that name the same request.
type occurrence struct {
	key   string
	time  time.Time
	room  string
	rid   string
	texts []string
	attr  attribution
}

const perMinuteLookback = 5 * time.Minute

func (a logAnalysis) run(entries []logEntry) (LogProgressOutput, []step.Event) {
	o := LogProgressOutput{
		Source: a.source, LastByRank: map[string]time.Time{}, Patterns: map[string]PatternSummary{},
		LastFields: map[string]float64{}, LaggingRanks: []string{},
	}
	var events []step.Event
	last := -1
	// Each line is matched once; the rate and bucket passes reuse it.
	progress := make([]bool, len(entries))
	for i, e := range entries {
		inWindow := !e.Time.Before(a.since)
		if inWindow {
			o.Lines++
		}
		if progress[i] = e.matches(a.progress); !progress[i] {
			continue
		}
		last = i
		if inWindow {
			o.ProgressLines++
		}
		if e.Ranks != "" && e.Time.After(o.LastByRank[e.Ranks]) {
			o.LastByRank[e.Ranks] = e.Time
		}
	}
	o.StartedAt = a.unitStart
	o.SilentSince, o.GapFrom = a.since, GapFromWindow
	if a.unitStart.After(o.SilentSince) && !a.unitStart.After(a.now) {
		o.SilentSince, o.GapFrom = a.unitStart, GapFromUnitStart
	}
	if last >= 0 {
		le := entries[last]
		o.Found, o.LastProgress, o.LastLine = true, le.Time, le.Message
		if b, ok := sglanglog.ParseBatch(le.Text); ok {
			o.LastFields = b.Fields
		}
		o.PerMinute = a.perMinute(entries, progress, le.Time)
		events = append(events, step.Event{Kind: EventProgress, Time: le.Time, Text: le.Message, Labels: map[string]string{"ranks": le.Ranks}})
		// A line logged before the unit last started belongs to the
		// process before it: the running one has been silent since it
		// started.
		if !le.Time.Before(o.SilentSince) || o.GapFrom == GapFromWindow {
			o.SilentSince, o.GapFrom = le.Time, GapFromProgress
		}
	}
	o.Gap = max(a.now.Sub(o.SilentSince), 0)
	o.Recent = a.recent(entries, progress)
	o.Stalled = o.Gap > a.stallAfter
	if o.Found && !o.Stalled {
		for _, r := range slices.Sorted(maps.Keys(o.LastByRank)) {
			if a.now.Sub(o.LastByRank[r]) > a.stallAfter {
				o.LaggingRanks = append(o.LaggingRanks, r)
			}
		}
	}
	events = append(events, a.rateEvents(entries, progress)...)
	if o.Stalled {
		events = append(events, step.Event{Kind: EventStall, Time: o.SilentSince, End: a.now,
			Text: fmt.Sprintf("no %q line for %s", a.progressText, round(o.Gap))})
	}
	for _, p := range a.patterns {
		sum, occs := a.countPattern(entries, p)
		o.Patterns[p.name] = sum
		o.Echoes += sum.Echoes
		o.Unexplained += sum.Unexplained
		events = append(events, matchEvents(p.name, occs)...)
	}
	return o, events
}

// recent returns progress lines inside the window with their batch
// fields, oldest first: every one of the newest recentAll, and before them
// the first of each second, up to maxRecent in all. A busy engine logs
// hundreds of lines a second; thinning keeps the report small and still
// lets an expression look at any moment of the window.
func (a logAnalysis) recent(entries []logEntry, progress []bool) []ProgressLine {
	out := []ProgressLine{}
	for i := len(entries) - 1; i >= 0 && len(out) < maxRecent; i-- {
		e := entries[i]
		if !progress[i] || e.Time.Before(a.since) {
			continue
		}
		if len(out) > recentAll && e.Time.Truncate(time.Second).Equal(out[len(out)-1].Time.Truncate(time.Second)) {
			// Walking back in time, the last line kept for a second is
			// replaced by an earlier one of the same second: the first of
			// each second is what remains.
			out = out[:len(out)-1]
		}
		pl := ProgressLine{Time: e.Time, Ranks: e.Ranks}
		if b, ok := sglanglog.ParseBatch(e.Text); ok {
			pl.Fields = b.Fields
		}
		out = append(out, pl)
	}
	slices.Reverse(out)
	return out
}

// perMinute is the progress rate in the lookback before the last progress
// line, measured from the first progress line inside it, so that a service
// that started being busy two minutes ago is not averaged over five. Spans
// under a minute count as a minute, so that a few lines do not extrapolate
// to a storm.
func (a logAnalysis) perMinute(entries []logEntry, progress []bool, last time.Time) float64 {
	from := last.Add(-perMinuteLookback)
	var first time.Time
	n := 0
	for i, e := range entries {
		if !progress[i] || e.Time.Before(from) || e.Time.After(last) {
			continue
		}
		if n == 0 {
			first = e.Time
		}
		n++
	}
	if span := last.Sub(first); span >= time.Minute {
		return float64(n-1) / span.Minutes()
	}
	return float64(n)
}

// rateEvents buckets the window's progress lines, empty buckets included,
// so a chart shows where the lines stop.
func (a logAnalysis) rateEvents(entries []logEntry, progress []bool) []step.Event {
	bucket := max(time.Minute, (a.window / 60).Round(time.Minute))
	start := a.since.Truncate(bucket)
	n := int(a.now.Sub(start)/bucket) + 1
	counts := make([]float64, n)
	for i, e := range entries {
		if !progress[i] || e.Time.Before(start) {
			continue
		}
		if i := int(e.Time.Sub(start) / bucket); i < n {
			counts[i]++
		}
	}
	evs := make([]step.Event, n)
	for i, c := range counts {
		t := start.Add(time.Duration(i) * bucket)
		evs[i] = step.Event{Kind: EventProgressRate, Time: t, End: t.Add(bucket), Value: c}
	}
	return evs
}

// countPattern groups the window's matching lines into occurrences and
// attributes each one.
func (a logAnalysis) countPattern(entries []logEntry, p namedPattern) (PatternSummary, []*occurrence) {
	var occs []*occurrence
	byKey := map[string]*occurrence{}
	sum := PatternSummary{Rooms: []string{}, Rids: []string{}}
	for i, e := range entries {
		if e.Time.Before(a.since) || !e.matches(p.re) {
			continue
		}
		sum.Lines++
		sum.LastLine = e.Text
		room, rid := sglanglog.IDs(e.Text)
		key := fmt.Sprintf("line:%d", i)
		switch {
		case room != "":
			key = "room:" + room
		case rid != "":
			key = "rid:" + rid
		}
		oc := byKey[key]
		if oc == nil {
			oc = &occurrence{key: key, time: e.Time, room: room, rid: rid}
			byKey[key] = oc
			occs = append(occs, oc)
		}
		oc.texts = append(oc.texts, e.Message)
	}
	attributeAll(occs, a.probes, a.grace)
	for _, oc := range occs {
		sum.Count++
		if oc.attr.Echo {
			sum.Echoes++
		} else {
			sum.Unexplained++
		}
		if sum.First.IsZero() {
			sum.First = oc.time
		}
		sum.Last = oc.time
		if oc.room != "" && !slices.Contains(sum.Rooms, oc.room) {
			sum.Rooms = append(sum.Rooms, oc.room)
		}
		if oc.rid != "" && !slices.Contains(sum.Rids, oc.rid) {
			sum.Rids = append(sum.Rids, oc.rid)
		}
	}
	return sum, occs
}

// maxMatchEvents caps the events per pattern, keeping the newest.
const maxMatchEvents = 200

func matchEvents(name string, occs []*occurrence) []step.Event {
	if len(occs) > maxMatchEvents {
		occs = occs[len(occs)-maxMatchEvents:]
	}
	evs := make([]step.Event, 0, len(occs))
	for _, oc := range occs {
		labels := map[string]string{"pattern": name, "attribution": oc.attr.label()}
		for k, v := range map[string]string{"room": oc.room, "rid": oc.rid, "by": oc.attr.By, "request_id": oc.attr.RequestID} {
			if v != "" {
				labels[k] = v
			}
		}
		evs = append(evs, step.Event{Kind: EventLogMatch, Time: oc.time, Text: oneLine(oc.texts[0], 300), Labels: labels})
	}
	return evs
}

// evidence writes the lines an on-call engineer reads.
func (a logAnalysis) evidence(o LogProgressOutput) []string {
	var ev []string
	what := fmt.Sprintf("%q", a.progressText)
	state := fmt.Sprintf("silent for %s, under the %s stall threshold", round(o.Gap), a.stallAfter)
	switch {
	case o.Stalled:
		state = fmt.Sprintf("stalled: silent for more than %s", a.stallAfter)
	case o.GapFrom == GapFromProgress:
		state = "progressing"
	}
	switch o.GapFrom {
	case GapFromProgress:
		ev = append(ev, fmt.Sprintf("last %s line at %s (%s), %s before it — %s",
			what, clockText(o.LastProgress, a.now), step.Ago(o.LastProgress), rateText(o.PerMinute), state))
	case GapFromUnitStart:
		line := fmt.Sprintf("no %s line since the unit started at %s (%s; %d lines read from the %s)",
			what, clockText(o.StartedAt, a.now), step.Ago(o.StartedAt), o.Lines, a.source)
		if o.Found {
			line += fmt.Sprintf("; the last one, at %s, was logged by the process before", clockText(o.LastProgress, a.now))
		}
		ev = append(ev, line+" — "+state)
	default:
		line := fmt.Sprintf("no %s line in the last %s (%d other lines read from the %s)", what, a.window, o.Lines, a.source)
		switch {
		case !o.StartedAt.IsZero():
			line += fmt.Sprintf("; the unit has been up since %s", clockText(o.StartedAt, a.now))
		case a.unitStartErr != nil:
			line += fmt.Sprintf("; when the unit started is unknown (%v), so %s is a lower bound", a.unitStartErr, a.window)
		default:
			line += fmt.Sprintf("; when the unit started is unknown, so %s is a lower bound", a.window)
		}
		if o.Lines == 0 {
			line += "; the service logged nothing at all"
		}
		ev = append(ev, line+" — "+state)
	}
	if o.Found {
		ev = append(ev, "last progress line: "+oneLine(o.LastLine, 240))
	}
	if len(o.LaggingRanks) > 0 {
		ev = append(ev, fmt.Sprintf("ranks silent for more than %s while others progress: %s", a.stallAfter, strings.Join(o.LaggingRanks, ", ")))
	}
	for _, p := range a.patterns {
		ev = append(ev, a.patternEvidence(p.name, o.Patterns[p.name]))
	}
	if o.Truncated {
		ev = append(ev, "the log was longer than the read limit; only its newest part was read")
	}
	return ev
}

func (a logAnalysis) patternEvidence(name string, s PatternSummary) string {
	if s.Count == 0 {
		return fmt.Sprintf("%s: none in the last %s", name, a.window)
	}
	line := fmt.Sprintf("%s: %d in the last %s", name, s.Count, a.window)
	if s.Lines != s.Count {
		line += fmt.Sprintf(" (%d lines: each rank logs its own)", s.Lines)
	}
	line += fmt.Sprintf(", %s to %s", clockText(s.First, a.now), clockText(s.Last, a.now))
	switch {
	case s.Echoes > 0 && s.Unexplained == 0:
		line += fmt.Sprintf("; all %d caused by this run's own probes (echoes, not causes)", s.Echoes)
	case s.Echoes > 0:
		line += fmt.Sprintf("; %d caused by this run's own probes (echoes), %d unexplained", s.Echoes, s.Unexplained)
	case len(a.probes) > 0:
		line += "; none lines up with this run's probes"
	}
	if n := len(s.Rooms); n > 0 {
		line += fmt.Sprintf("; latest room %s", s.Rooms[n-1])
	}
	return line
}

func rateText(perMinute float64) string {
	if perMinute == 0 {
		return "no progress lines"
	}
	rounded := float64(int(perMinute*10+0.5)) / 10
	switch rounded {
	case 0:
		return "under 0.1 lines/min"
	case 1:
		return "1 line/min"
	}
	return formatNumber(rounded) + " lines/min"
}

// clockText shows a time in UTC, with the date only when it is not today's.
func clockText(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	layout := "15:04:05"
	if t.Nanosecond() != 0 {
		layout = "15:04:05.000"
	}
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		layout = "2006-01-02 " + layout
	}
	return t.Format(layout) + " UTC"
}
