// Package cronspec is the one reading of a schedule's cron spec, shared
// by the runbooks' triggers.schedule, serve's config and the scheduler, so
// that a spec lint accepts is one the scheduler runs.
package cronspec

import "github.com/robfig/cron/v3"

// Parser parses schedules: standard five fields, an optional leading
// seconds field, descriptors such as @every 10m, and a CRON_TZ= prefix.
var Parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses spec with Parser.
func Parse(spec string) (cron.Schedule, error) { return Parser.Parse(spec) }
