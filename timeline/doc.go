// Package timeline draws a run's evidence on one time axis: how fast each
// engine logged progress and where it stopped, this run's own probes, the
// error lines they echoed and the ones nobody explains, the counters the
// run sampled, and any remediation that followed. The picture answers
// "what happened when" at a glance, in Slack or on disk.
//
// The data model (Chart, built by FromReport from what the checks already
// recorded) is separate from drawing it (Chart.Render), so that what the
// chart claims can be tested without looking at pixels.
package timeline
