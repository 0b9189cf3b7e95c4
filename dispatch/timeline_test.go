package dispatch

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// fakeTimeline draws the given bytes (or fails) and remembers the reports
// it drew.
type fakeTimeline struct {
	mu      sync.Mutex
	reports []*runbooks.Report
	png     []byte
	err     error
}

func (f *fakeTimeline) draw(rep *runbooks.Report) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, rep)
	return f.png, f.err
}

// picture stands for a rendered PNG: the dispatcher passes it on as it is.
var picture = []byte("\x89PNG\r\n\x1a\n a timeline")

// runStuckWorker submits the stuck-worker runbook (its diagnosis holds)
// and waits for everything it started; it returns the run.
func runStuckWorker(t *testing.T, d *Dispatcher, st *store.SQLite, dir string, req Request) store.Run {
	t.Helper()
	req.Runbook, req.Params, req.Source = "stuck-worker", map[string]string{"host": "here", "dir": dir}, store.TriggerChat
	acc, err := d.Submit(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, d.Idle(t.Context()))
	w, err := st.GetWork(t.Context(), acc.WorkID)
	require.NoError(t, err)
	run, err := st.GetRun(t.Context(), w.RunID)
	require.NoError(t, err)
	require.NotNil(t, run.Message)
	return run
}

// notesIn returns the texts posted in the thread of the message id.
func notesIn(rec *chattest.Recorder, id string) []string {
	var out []string
	for _, p := range rec.Posts() {
		if p.Thread == id {
			out = append(out, p.Message.Text())
		}
	}
	return out
}

// The timeline picture of a run goes into the run message's thread once
// the diagnosis is in, drawn from the run's report.
func TestTimelineUploadedIntoRunThread(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	tl := &fakeTimeline{png: picture}
	d, st, dir := newChatDispatcherWith(t, rec, testSetup{timeline: tl.draw})
	run := runStuckWorker(t, d, st, dir, Request{})

	ups := rec.Uploads()
	require.Len(t, ups, 1)
	require.Equal(t, opsChan, ups[0].Channel)
	require.Equal(t, run.Message.ID, ups[0].Thread, "in the run message's thread")
	require.Equal(t, "timeline-"+run.ID+".png", ups[0].File.Name)
	require.Contains(t, ups[0].File.AltText, "Timeline of run "+run.ID)
	require.Equal(t, picture, ups[0].File.Data, "the bytes uploaded are the rendered picture")
	require.Len(t, tl.reports, 1)
	require.Equal(t, run.ID, tl.reports[0].RunID)
	require.NotEmpty(t, tl.reports[0].Diagnoses, "drawn from the finished report")
	require.Empty(t, notesIn(rec, run.Message.ID))
}

// A run posted into an alert's thread puts its picture in that thread.
func TestTimelineFollowsAlertThread(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, st, dir := newChatDispatcherWith(t, rec, testSetup{timeline: (&fakeTimeline{png: picture}).draw})
	runStuckWorker(t, d, st, dir, Request{Channel: "C0ALERTS", Thread: "1700000000.000001"})
	ups := rec.Uploads()
	require.Len(t, ups, 1)
	require.Equal(t, "C0ALERTS", ups[0].Channel)
	require.Equal(t, "1700000000.000001", ups[0].Thread)
}

// A failed upload or a renderer error leaves the diagnosis in place and
// says so in one short line in the thread; a run with nothing to draw
// gets no picture and no note; without a renderer nothing is uploaded.
func TestTimelineOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		tl         *fakeTimeline
		failUpload error
		uploads    int
		note       string
	}{
		{name: "drawn and uploaded", tl: &fakeTimeline{png: picture}, uploads: 1},
		{name: "upload refused", tl: &fakeTimeline{png: picture}, failUpload: errors.New("not_in_channel"), note: "not_in_channel"},
		{name: "render error", tl: &fakeTimeline{err: errors.New("font cache exploded")}, note: "font cache exploded"},
		{name: "nothing to draw", tl: &fakeTimeline{}},
		{name: "no renderer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := chattest.New()
			logs := &syncbuf.Buffer{}
			setup := testSetup{logs: logs}
			if c.tl != nil {
				setup.timeline = c.tl.draw
			}
			d, st, dir := newChatDispatcherWith(t, rec, setup)
			if c.failUpload != nil {
				rec.FailNext(chattest.OpUpload, c.failUpload)
			}
			run := runStuckWorker(t, d, st, dir, Request{})
			require.Len(t, rec.Uploads(), c.uploads)
			require.Equal(t, store.RunFinished, run.Status)
			var msg string
			for _, p := range rec.Posts() {
				if p.Ref == chat.Ref(*run.Message) {
					msg = p.Last().Text()
				}
			}
			require.Contains(t, msg, "The worker is wedged while its health check passes")
			notes := notesIn(rec, run.Message.ID)
			if c.note == "" {
				require.Empty(t, notes)
				return
			}
			require.Len(t, notes, 1)
			require.Contains(t, notes[0], "Timeline picture not posted")
			require.Contains(t, notes[0], c.note)
			require.Contains(t, logs.String(), "timeline picture not posted")
		})
	}
}
