package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/cronspec"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// PostPolicy says when a scheduled audit's result is posted to Slack.
type PostPolicy string

const (
	// PostAlways posts every run.
	PostAlways PostPolicy = "always"
	// PostOnChange posts a run whose outcome or diagnoses differ from the
	// schedule's previous run (a first run only when it is not ok). A
	// fleet audit compares each deployment with its own previous run and
	// posts its first firing as the fleet's baseline (planFleet).
	PostOnChange PostPolicy = "on_change"
	// PostOnFailure posts every run that is not ok.
	PostOnFailure PostPolicy = "on_failure"
)

// Schedule runs a runbook on a cron schedule.
type Schedule struct {
	// Name identifies the schedule in the store (its runs' RequestedBy),
	// in metrics and in Slack; derived from the runbook and params when
	// empty.
	Name    string
	Runbook string
	// Cron is five fields, or six with leading seconds, or a descriptor
	// such as "@every 10m" or "@daily".
	Cron string
	// TimeZone is an IANA zone such as "Europe/Paris"; the scheduler's
	// when empty.
	TimeZone string
	Params   map[string]string
	// Post is when the result is posted; PostOnChange when empty.
	Post PostPolicy
	// Channel is where results go; the bot's channel when empty.
	Channel string
	// Deployments, when set, makes the schedule a fleet audit: "all", or
	// a glob (path.Match) of inventory deployment names. Each firing runs
	// the runbook once per selected deployment that has the roles the
	// runbook targets, its deployment param set to that deployment (so
	// Params must not set it), and posts at most one message: what
	// changed, deployment by deployment (planFleet, fleetMessage).
	Deployments string
	// Parallel bounds the deployments of a fleet audit that run at once;
	// DefaultParallel when zero. It is an error without Deployments.
	Parallel int
}

// DefaultParallel is how many deployments of a fleet audit run at once
// unless the schedule says otherwise; the CLI's --parallel default.
const DefaultParallel = 4

// Config configures scheduled audits. Runbooks that declare
// triggers.schedule are scheduled too (with their schedule_params and
// PostOnChange), unless a configured schedule names the same runbook.
type Config struct {
	Schedules []Schedule
	// TimeZone is the default zone of schedules; the local zone when
	// empty.
	TimeZone string
	// Summary, when set, is a cron spec (e.g. "0 9 * * *") at which a
	// summary of the last 24 hours of scheduled audits is posted, quiet
	// ones included, so that silence is known to mean "all is well".
	Summary        string
	SummaryChannel string
}

// Deps are the optional parts of a Scheduler: what every trigger takes
// (the store where the schedules' previous runs are read, for on_change
// and the summary — without one, every run is posted as if its previous
// run could not be read, and no summary is made; the chat that gets the
// audit summaries; the heartbeat that gets the cron loop registered as
// SchedulerHeartbeat; the logger and clock), and the fleet.
type Deps struct {
	dispatch.TriggerDeps
	// Fleet is the inventory fleet audits (Schedule.Deployments) pick
	// their deployments from; a fleet schedule is refused without one.
	Fleet *bind.Fleet
	// Ticks, when set, are the per-tick claims shared by every replica:
	// each tick runs once across them, and a tick whose claimer died is
	// caught up (cluster.go). Without it, each process runs every tick.
	Ticks store.ScheduleTicks
	// Catalog, when set, is the runbooks the schedules are checked
	// against and that declare schedules of their own; the dispatcher's
	// when nil. A reload builds the Successor against the catalog it is
	// about to install, before the dispatcher has it.
	Catalog *catalog.Catalog
}

// SchedulerHeartbeat is the heartbeat name of the cron loop.
const SchedulerHeartbeat = "scheduler"

const (
	schedulerBeat   = 15 * time.Second
	schedulerMaxGap = time.Minute
)

// scheduled is one schedule, compiled.
type scheduled struct {
	Schedule
	sched cron.Schedule
	// tickState is shared with the schedule of the same name in a
	// Successor, so that an audit that a reload finds running still keeps
	// the next tick from overlapping it.
	*tickState
	// fleet, for a fleet audit, is the deployments each firing runs on,
	// sorted, and depParam the runbook's param set to each.
	fleet    []string
	depParam string
}

// tickState is what one schedule's firings share.
type tickState struct {
	// running is set while a run of the schedule goes; a tick meanwhile
	// is skipped, so a slow audit never overlaps itself.
	running atomic.Bool
	// starting serializes deciding to run a tick (the running flag and
	// the tick claim), so that a catch-up check that finds nothing to do
	// never makes a tick due at the same instant look skipped.
	starting sync.Mutex
	// skipped and panicked count since the last summary.
	skipped  atomic.Int64
	panicked atomic.Int64
}

// Scheduler runs audits on cron schedules through the dispatch.Dispatcher's
// engine and store, bounded by its run slots, and posts their results as
// their PostPolicy says.
type Scheduler struct {
	cfg     Config
	disp    *dispatch.Dispatcher
	store   store.Store
	chat    chat.Chat
	fleet   *bind.Fleet
	entries []*scheduled
	loc     *time.Location
	summary cron.Schedule
	log     *slog.Logger
	now     func() time.Time
	beat    *heartbeat.Monitor
	metrics *scheduleMetrics
	ticks   store.ScheduleTicks
	// catalog is what the schedules were compiled against.
	catalog *catalog.Catalog

	// audit runs one scheduled audit; tests replace it.
	audit func(ctx context.Context, e *scheduled) auditResult
}

// New checks every schedule: the runbook exists, its params are
// valid, the cron spec and time zone parse.
func New(cfg Config, d *dispatch.Dispatcher, deps Deps) (*Scheduler, error) {
	return newScheduler(cfg, d, deps, nil)
}

// Successor builds the scheduler that replaces s after a reload: cfg and
// deps as New takes them (the new schedules, and deps.Fleet the new
// inventory), checked against the dispatcher's current catalog. It counts
// into s's metrics, and a schedule that keeps its name keeps its state: an
// audit of s still running skips the successor's ticks until it ends. The
// caller stops s's Run before it starts the successor's; s's audits in
// flight are the dispatcher's work and finish on their own.
func (s *Scheduler) Successor(cfg Config, deps Deps) (*Scheduler, error) {
	return newScheduler(cfg, s.disp, deps, s)
}

func newScheduler(cfg Config, d *dispatch.Dispatcher, deps Deps, prev *Scheduler) (*Scheduler, error) {
	if d == nil {
		return nil, errors.New("scheduler: a dispatcher is required")
	}
	deps.TriggerDeps = d.ForTrigger(deps.TriggerDeps, "scheduler")
	s := &Scheduler{cfg: cfg, disp: d, store: deps.Store, chat: deps.Chat, fleet: deps.Fleet, log: deps.Logger, now: deps.Now, beat: deps.Heartbeat, metrics: newScheduleMetrics(), ticks: deps.Ticks}
	if prev != nil {
		s.metrics = prev.metrics
	}
	if s.catalog = deps.Catalog; s.catalog == nil {
		s.catalog = d.Catalog()
	}
	s.audit = s.runAudit
	s.loc = time.Local
	if cfg.TimeZone != "" {
		loc, err := time.LoadLocation(cfg.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("scheduler time zone %q: %w", cfg.TimeZone, err)
		}
		s.loc = loc
	}
	var errs []error
	names := map[string]bool{}
	for i, sc := range s.allSchedules() {
		e, err := s.compile(sc)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %d (%s): %w", i+1, sc.Runbook, err))
			continue
		}
		if names[e.Name] {
			errs = append(errs, fmt.Errorf("schedule %d: name %q is used twice; give one a name", i+1, e.Name))
			continue
		}
		names[e.Name] = true
		if prev != nil {
			if i := slices.IndexFunc(prev.entries, func(p *scheduled) bool { return p.Name == e.Name }); i >= 0 {
				e.tickState = prev.entries[i].tickState
			}
		}
		s.entries = append(s.entries, e)
	}
	if cfg.Summary != "" {
		sum, err := cronspec.Parse(cfg.Summary)
		if err != nil {
			errs = append(errs, fmt.Errorf("summary schedule %q: %w", cfg.Summary, err))
		}
		s.summary = sum
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// A successor beats under the name its predecessor registered:
	// registering again would make readiness wait for its first beat.
	if s.beat != nil && prev == nil {
		s.beat.Register(SchedulerHeartbeat, schedulerMaxGap)
	}
	return s, nil
}

// allSchedules is the configured schedules plus those the runbooks
// declare for themselves.
func (s *Scheduler) allSchedules() []Schedule {
	out := slices.Clone(s.cfg.Schedules)
	configured := map[string]bool{}
	for _, sc := range out {
		configured[sc.Runbook] = true
	}
	for _, rb := range s.catalog.All() {
		if rb.Triggers.Schedule == "" || configured[rb.Name] {
			continue
		}
		out = append(out, Schedule{Runbook: rb.Name, Cron: rb.Triggers.Schedule, Params: rb.Triggers.ScheduleParams, Post: PostOnChange})
	}
	return out
}

// checkDeployment refuses, when the scheduler knows the inventory, a
// schedule whose deployment param names a deployment that is not in it or
// lacks a role the runbook targets: every firing would fail, and a
// misspelt deployment should stop serve from starting, not show up at 3am.
func (s *Scheduler) checkDeployment(rb *runbooks.Runbook, params map[string]string) error {
	dp := rb.DeploymentParam()
	if dp == nil || s.fleet == nil {
		return nil
	}
	// The param's type admits no glob characters, so the name selects
	// itself or nothing.
	members, err := s.fleet.Select(rb, params[dp.Name])
	if err == nil {
		err = members[0].Err
	}
	if err != nil {
		return fmt.Errorf("param %s: %w", dp.Name, err)
	}
	return nil
}

func (s *Scheduler) compile(sc Schedule) (*scheduled, error) {
	rb, err := s.catalog.Get(sc.Runbook)
	if err != nil {
		return nil, &dispatch.UnknownRunbookError{Name: sc.Runbook, Suggestion: yamlnode.Suggest(sc.Runbook, s.catalog.Names())}
	}
	var (
		fleet    []string
		depParam string
	)
	if sc.Deployments != "" {
		if fleet, depParam, err = s.compileFleet(rb, &sc); err != nil {
			return nil, err
		}
	} else {
		if sc.Parallel != 0 {
			return nil, fmt.Errorf("parallel %d: only a fleet audit (deployments) runs in parallel", sc.Parallel)
		}
		_, resolved, err := rb.ResolveParams(sc.Params)
		if err != nil {
			return nil, err
		}
		if err := s.checkDeployment(rb, resolved); err != nil {
			return nil, err
		}
	}
	switch sc.Post {
	case "":
		sc.Post = PostOnChange
	case PostAlways, PostOnChange, PostOnFailure:
	default:
		return nil, fmt.Errorf("post %q: want always, on_change or on_failure", sc.Post)
	}
	spec := strings.TrimSpace(sc.Cron)
	if sc.TimeZone != "" {
		if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
			return nil, fmt.Errorf("cron %q names a time zone and time_zone is set too; keep one", sc.Cron)
		}
		if _, err := time.LoadLocation(sc.TimeZone); err != nil {
			return nil, fmt.Errorf("time zone %q: %w", sc.TimeZone, err)
		}
		spec = "CRON_TZ=" + sc.TimeZone + " " + spec
	}
	sched, err := cronspec.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", sc.Cron, err)
	}
	if sc.Name == "" {
		// The name is logged, shown and recorded as the runs' requester:
		// a secret param is masked in it (two schedules that differ only
		// there are told to name themselves).
		sc.Name = strings.TrimSpace(rb.Name + " " + runview.ParamText(rb.MaskSecrets(sc.Params)))
		if sc.Deployments != "" {
			sc.Name += " deployments=" + sc.Deployments
		}
	}
	sc.Params = maps.Clone(sc.Params)
	return &scheduled{Schedule: sc, sched: sched, tickState: &tickState{}, fleet: fleet, depParam: depParam}, nil
}

// Schedules lists the schedules, configured and declared, with their
// names and policies filled in.
func (s *Scheduler) Schedules() []Schedule {
	out := make([]Schedule, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.Schedule
	}
	return out
}

// Run runs the schedules until ctx ends. Audits still going then are the
// bot's background work: Bot.Shutdown waits for them or cancels them.
func (s *Scheduler) Run(ctx context.Context) error {
	logger := cronLogger{s.log}
	// Recover catches a panic in the scheduler's own jobs (the summary,
	// starting a run); runs catch their own.
	c := cron.New(cron.WithLocation(s.loc), cron.WithLogger(logger), cron.WithChain(cron.Recover(logger)))
	for _, e := range s.entries {
		c.Schedule(e.sched, cron.FuncJob(func() { s.fire(ctx, e) }))
		s.log.Info("audit scheduled", "schedule", e.Name, "cron", e.Cron, "time_zone", e.TimeZone, "post", e.Post)
	}
	if s.summary != nil {
		c.Schedule(s.summary, cron.FuncJob(func() {
			// One replica posts each summary: the one that records its
			// tick.
			if s.ticks == nil {
				s.postSummary(ctx)
				return
			}
			at := tickAt(s.summary, s.now())
			if s.recordTick(ctx, summaryTicks, at, store.TickClaimed, false) {
				s.postSummary(ctx)
				s.finishTick(ctx, summaryTicks, at, "")
			}
		}))
	}
	if s.ticks != nil {
		c.Schedule(cron.Every(catchUpEvery), cron.FuncJob(func() { s.catchUp(ctx) }))
	}
	// The beat is a job of the cron loop itself, so a stuck loop shows.
	s.heartbeat()
	c.Schedule(cron.Every(schedulerBeat), cron.FuncJob(s.heartbeat))
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}

func (s *Scheduler) heartbeat() {
	if s.beat != nil {
		s.beat.Beat(SchedulerHeartbeat)
	}
}

// fire starts the run of a schedule's tick now due.
func (s *Scheduler) fire(ctx context.Context, e *scheduled) {
	s.fireTick(ctx, e, tickAt(e.sched, s.now()), false)
}

// fireTick starts one run of a schedule for the tick at, unless its
// previous run still goes, or, with tick claims, another replica runs the
// tick. A catch-up (catchUp) is run the same way, late. A panic in the run
// is caught and counted; the schedule goes on.
func (s *Scheduler) fireTick(ctx context.Context, e *scheduled, at time.Time, catchUp bool) {
	if ctx.Err() != nil {
		return
	}
	e.starting.Lock()
	defer e.starting.Unlock()
	if !e.running.CompareAndSwap(false, true) {
		if catchUp {
			// The next check tries again, once the run ends.
			return
		}
		e.skipped.Add(1)
		s.metrics.skipped.WithLabelValues(e.Name).Inc()
		s.log.Warn("scheduled audit skipped: the previous run is still going", "schedule", e.Name)
		// Recorded, so that no catch-up runs it once the run ends.
		s.recordTick(ctx, e.Name, at, store.TickSkipped, false)
		return
	}
	claimed := s.ticks != nil
	if claimed && !s.claim(ctx, e, at, catchUp) {
		e.running.Store(false)
		return
	}
	err := s.disp.Go("audit "+e.Name, s.auditTimeout(e), func(ctx context.Context) {
		defer e.running.Store(false)
		var runID string
		if claimed {
			defer func() { s.finishTick(ctx, e.Name, at, runID) }()
		}
		defer func() {
			if r := recover(); r != nil {
				e.panicked.Add(1)
				s.metrics.panics.WithLabelValues(e.Name).Inc()
				s.log.Error("scheduled audit panicked", "schedule", e.Name, "panic", r, "stack", string(debug.Stack()))
			}
		}()
		res := s.audit(ctx, e)
		runID = res.RunID
		s.metrics.record(e.Name, res)
		if res.Err != nil {
			s.log.Error("scheduled audit failed", "schedule", e.Name, "run", res.RunID, "err", res.Err)
			return
		}
		s.log.Info("scheduled audit done", "schedule", e.Name, "run", res.RunID, "outcome", res.Outcome, "deployments", len(res.Fleet), "posted", res.Posted, "why", res.Reason)
	})
	if err != nil {
		e.running.Store(false)
		s.log.Warn("scheduled audit not started", "schedule", e.Name, "err", err)
	}
}

// cronLogger sends robfig/cron's logs to slog.
type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug("cron: "+msg, kv...) }

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, "err", err)...)
}
