package slackchat

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// uploadCall is one request of Slack's file upload flow.
type uploadCall struct {
	Method string
	Form   url.Values
	// File and Filename are the bytes and name of the POST to the upload URL.
	File     []byte
	Filename string
	// Before holds the Slack calls the fake had seen when this one came.
	Before []slackrec.Call
}

// uploads records Slack's three-step file upload on the fake Slack: it
// hands out an upload URL on the fake's own host (slack-go sends the token
// only there), takes the multipart POST of the bytes, and completes. A
// method named in fail answers ok:false with that error.
type uploads struct {
	rec *slackrec.Recorder

	mu    sync.Mutex
	calls []uploadCall
	fail  map[string]string
}

func recordUploads(t *testing.T, rec *slackrec.Recorder) *uploads {
	t.Helper()
	u := &uploads{rec: rec, fail: map[string]string{}}
	srv := rec.Server()
	srv.Handle("/files.getUploadURLExternal", u.method("files.getUploadURLExternal", func(form url.Values) any {
		return map[string]any{"ok": true, "file_id": "F0TIMELINE", "upload_url": rec.APIURL() + "upload/F0TIMELINE"}
	}))
	srv.Handle("/files.completeUploadExternal", u.method("files.completeUploadExternal", func(form url.Values) any {
		var files []map[string]any
		require.NoError(t, json.Unmarshal([]byte(form.Get("files")), &files))
		return map[string]any{"ok": true, "files": files}
	}))
	srv.Handle("/upload/", func(w http.ResponseWriter, r *http.Request) {
		call := uploadCall{Method: "upload", Before: rec.Calls()}
		if err := r.ParseMultipartForm(8 << 20); err == nil {
			if f, hdr, err := r.FormFile("file"); err == nil {
				call.File, _ = io.ReadAll(f)
				call.Filename = hdr.Filename
			}
		}
		u.add(call)
		w.WriteHeader(http.StatusOK)
	})
	return u
}

func (u *uploads) method(name string, answer func(url.Values) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		u.add(uploadCall{Method: name, Form: form, Before: u.rec.Calls()})
		u.mu.Lock()
		code := u.fail[name]
		u.mu.Unlock()
		resp := answer(form)
		if code != "" {
			resp = map[string]any{"ok": false, "error": code}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}
}

func (u *uploads) add(c uploadCall) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls = append(u.calls, c)
}

func (u *uploads) get() []uploadCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]uploadCall(nil), u.calls...)
}

// fakeTimeline draws a small real PNG and remembers the reports it drew.
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

func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	img.Set(3, 4, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// withTimeline gives the harness' bot a timeline renderer, as the binary
// does with timeline.ForChat.
func withTimeline(h *harness, f *fakeTimeline) {
	h.draw = f.draw
}

// The timeline picture goes into the run's thread after the message shows
// the diagnosis, through Slack's three-step upload. (What the dispatcher
// uploads where, and what it does when drawing fails, is tested in
// dispatch on the recording chat.)
func TestTimelineUploadedIntoRunThreadAfterDiagnosis(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	up := recordUploads(t, h.rec)
	tl := &fakeTimeline{png: testPNG(t)}
	withTimeline(h, tl)

	run, ts := h.runOnce("")

	calls := up.get()
	require.Equal(t, []string{"files.getUploadURLExternal", "upload", "files.completeUploadExternal"}, methods(calls))
	get, file, done := calls[0], calls[1], calls[2]
	name := "timeline-" + run.ID + ".png"
	require.Equal(t, name, get.Form.Get("filename"))
	require.Equal(t, len(tl.png), mustAtoi(t, get.Form.Get("length")))
	require.Contains(t, get.Form.Get("alt_txt"), "Timeline of run "+run.ID)
	require.Equal(t, tl.png, file.File, "the bytes uploaded are the rendered picture")
	_, err := png.Decode(bytes.NewReader(file.File))
	require.NoError(t, err)
	require.Equal(t, opsChan, done.Form.Get("channel_id"))
	require.Equal(t, ts, done.Form.Get("thread_ts"), "in the run message's thread")
	require.Contains(t, done.Form.Get("files"), `"F0TIMELINE"`)

	// By the time the upload began, the run's message already showed the
	// diagnosis.
	require.Contains(t, lastContent(get.Before, ts), "The worker is wedged while its health check passes")

	require.Len(t, tl.reports, 1)
	require.Equal(t, run.ID, tl.reports[0].RunID)
	require.NotEmpty(t, tl.reports[0].Diagnoses)
}

// A failed upload leaves the diagnosis in place and says so in one short
// line in the thread.
func TestTimelineUploadFailureIsNotedNotFatal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	up := recordUploads(t, h.rec)
	up.fail["files.completeUploadExternal"] = "not_in_channel"
	withTimeline(h, &fakeTimeline{png: testPNG(t)})

	run, ts := h.runOnce("")

	require.Contains(t, h.lastMessage(ts).Text(), "The worker is wedged while its health check passes")
	var notes []slackrec.Call
	for _, c := range h.rec.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") == ts {
			notes = append(notes, c)
		}
	}
	require.Len(t, notes, 1)
	require.Contains(t, notes[0].Text(), "Timeline picture not posted")
	require.Contains(t, notes[0].Text(), "not_in_channel")
	require.Contains(t, h.logs.String(), "timeline picture not posted")
	got, err := h.store.GetRun(t.Context(), run.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, got.Status)
}

func methods(calls []uploadCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}

// lastContent is the text the message at ts showed after the given calls.
func lastContent(calls []slackrec.Call, ts string) string {
	text := ""
	for _, c := range calls {
		switch {
		case c.Method == "chat.update" && c.Form.Get("ts") == ts && c.Status == http.StatusOK:
			text = c.Text()
		case c.Method == "chat.postMessage" && text == "":
			text = c.Text()
		}
	}
	return text
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
