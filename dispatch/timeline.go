package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
)

// TimelineFunc renders a run's timeline picture as a PNG. A nil picture
// with a nil error means the run recorded nothing worth drawing. The
// binary passes timeline.ForChat; the dispatcher takes a function because its
// layering keeps it from importing the timeline package.
type TimelineFunc func(rep *runbooks.Report) ([]byte, error)

// timelineTimeout bounds rendering and uploading one picture.
const timelineTimeout = 2 * time.Minute

// postTimeline uploads the run's timeline picture into the run's thread.
// It is called once the diagnosis is in the run's message, and works in
// the background, so the picture never holds up the diagnosis or the run's
// slot; when it fails, the failure is logged and the thread gets one short
// line saying so.
func (d *Dispatcher) postTimeline(rs *runState, pl workPayload) {
	if d.timeline == nil || d.chat == nil {
		return
	}
	rs.mu.Lock()
	rep, ref, runID := rs.Report, rs.Run.Message, rs.Run.ID
	rs.mu.Unlock()
	if rep == nil || ref == nil {
		return
	}
	// A run posted as a reply (an alert's thread) shares that thread;
	// otherwise the run's own message starts one.
	thread := pl.Thread
	if thread == "" {
		thread = ref.ID
	}
	log := d.log.With("run", runID)
	err := d.tasks.Go("timeline upload", timelineTimeout, func(ctx context.Context) {
		if err := d.uploadTimeline(ctx, rep, ref.Channel, thread); err != nil {
			log.Warn("timeline picture not posted", "err", err)
			note := chat.Message{Title: "Timeline picture not posted", Status: chat.StatusWarning, Notes: []string{err.Error()}}
			if _, perr := d.chat.Post(ctx, ref.Channel, thread, note); perr != nil {
				log.Warn("timeline failure not noted in the thread", "err", perr)
			}
		}
	})
	if err != nil {
		log.Warn("timeline picture not posted", "err", err)
	}
}

func (d *Dispatcher) uploadTimeline(ctx context.Context, rep *runbooks.Report, channel, thread string) error {
	// The picture shows text from the report (log lines, params, probe
	// labels), so it is redacted like every message: pixels in a chat are
	// as readable as text.
	if d.redactor != nil {
		shown := new(runbooks.Report)
		if err := d.redactor.Copy(rep, shown); err != nil {
			return fmt.Errorf("redact the report for its timeline: %w", err)
		}
		rep = shown
	}
	png, err := d.timeline(rep)
	if err != nil {
		return fmt.Errorf("render timeline: %w", err)
	}
	if len(png) == 0 {
		return nil
	}
	err = d.chat.Upload(ctx, channel, thread, chat.File{
		Name:  "timeline-" + rep.RunID + ".png",
		Title: "Timeline of run " + rep.RunID,
		AltText: "Timeline of run " + rep.RunID + ": progress of each engine per minute, when it last made progress, " +
			"this run's probes, and the error lines it found",
		Data: png,
	})
	if err != nil {
		return fmt.Errorf("upload timeline to %s: %w", channel, err)
	}
	return nil
}
