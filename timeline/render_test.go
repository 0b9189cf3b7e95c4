package timeline

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRenderIsAPNGOfTheAskedSize(t *testing.T) {
	c, err := FromReport(loadReport(t, "wedge.json"), Options{})
	require.NoError(t, err)
	for _, size := range []image.Point{{1200, 800}, {MinWidth, MinHeight}, {1600, 1000}} {
		var buf bytes.Buffer
		require.NoError(t, c.Render(&buf, size.X, size.Y))
		cfg, format, err := image.DecodeConfig(bytes.NewReader(buf.Bytes()))
		require.NoError(t, err)
		require.Equal(t, "png", format)
		require.Equal(t, size, image.Pt(cfg.Width, cfg.Height))
	}
}

func TestRenderRefusesTooSmall(t *testing.T) {
	c, err := FromReport(loadReport(t, "wedge.json"), Options{})
	require.NoError(t, err)
	require.ErrorContains(t, c.Render(&bytes.Buffer{}, 300, 200), "too small")
}

func TestWritePNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timeline.png")
	require.NoError(t, WritePNG(path, loadReport(t, "wedge.json"), Options{}))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, Width, Height), img.Bounds())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")

	require.ErrorContains(t, WritePNG(filepath.Join(t.TempDir(), "no", "such", "dir.png"), loadReport(t, "wedge.json"), Options{}), "write timeline")
}

// progressAt counts the pixels of the progress fill in the lane's column
// at time t: how tall the drawn progress rate is there.
func progressAt(img image.Image, l *layout, b laneBox, t time.Time) int {
	x := l.pixel(vg2(l.x(t), 0)).X
	top, bottom := l.pixel(vg2(0, b.values.Max.Y)).Y, l.pixel(vg2(0, b.values.Min.Y)).Y
	n := 0
	for y := top; y <= bottom; y++ {
		if img.At(x, y) == colProgress {
			n++
		}
	}
	return n
}

// requireCliff checks, in the rendered pixels of the lane, that progress
// is drawn just before `before` and nowhere from `after` to the end of
// what the check saw.
func requireCliff(t *testing.T, img image.Image, l *layout, b laneBox, before, after time.Time) {
	t.Helper()
	require.Greater(t, progressAt(img, l, b, before), 10, "progress drawn at %s", clock(before))
	requireNoProgressAfter(t, img, l, b, after)
}

// requireProgressDuring checks that progress is drawn, at least a tenth of
// the lane tall, somewhere in [from, to]. A live run cannot say at which
// instant: lines are stamped to the second and counted in per-minute
// buckets, so a bucket that caught only the first second of the traffic
// is drawn low.
func requireProgressDuring(t *testing.T, img image.Image, l *layout, b laneBox, from, to time.Time) {
	t.Helper()
	best := 0
	for ts := from; !ts.After(to); ts = ts.Add(onePixel(l)) {
		best = max(best, progressAt(img, l, b, ts))
	}
	require.Greater(t, best, 10, "progress drawn between %s and %s", clock(from), clock(to))
}

// requireNoProgressAfter checks that no progress is drawn from `after`
// to the end of what the check saw.
func requireNoProgressAfter(t *testing.T, img image.Image, l *layout, b laneBox, after time.Time) {
	t.Helper()
	end := b.lane.Measured
	require.True(t, end.After(after), "the check looked at %s, after %s", clock(end), clock(after))
	for ts := after; ts.Before(end); ts = ts.Add(onePixel(l)) {
		require.Zero(t, progressAt(img, l, b, ts), "no progress may be drawn at %s", clock(ts))
	}
}

// onePixel is the time one pixel column spans.
func onePixel(l *layout) time.Duration {
	return time.Duration(float64(l.t1.Sub(l.t0)) / float64(l.right-l.left))
}

func laneOf(t *testing.T, l *layout, target string) laneBox {
	t.Helper()
	for _, b := range l.lanes {
		if b.lane.Target == target {
			return b
		}
	}
	t.Fatalf("no %s lane", target)
	return laneBox{}
}

// The recorded wedge: decode's lane shows progress before its last batch
// line and none after it, in the pixels.
func TestRenderedWedgeShowsTheCliff(t *testing.T) {
	c, err := FromReport(loadReport(t, "wedge.json"), Options{})
	require.NoError(t, err)
	img, l, err := c.draw(Width, Height)
	require.NoError(t, err)
	decode := laneOf(t, l, "decode")
	require.True(t, decode.lane.Stalled)
	requireCliff(t, img, l, decode, decode.lane.Last.Add(-30*time.Second), decode.lane.Last.Add(3*time.Second))
	// Prefill went on running batches after decode's last one: its lane
	// has no cliff there.
	prefill := laneOf(t, l, "prefill")
	require.Greater(t, progressAt(img, l, prefill, decode.lane.Last.Add(10*time.Second)), 10)
}

func BenchmarkRender(b *testing.B) {
	c, err := FromReport(loadReport(b, "wedge.json"), Options{})
	require.NoError(b, err)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := c.Render(&buf, Width, Height); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFromReportAndRender(b *testing.B) {
	rep := loadReport(b, "wedge.json")
	for b.Loop() {
		if _, err := PNG(rep, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// The chart's own PNG encoder writes exactly the pixels that were drawn.
func TestEncodePNGKeepsThePixels(t *testing.T) {
	c, err := FromReport(loadReport(t, "wedge.json"), Options{})
	require.NoError(t, err)
	img, _, err := c.draw(Width, Height)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, encodePNG(&buf, img))
	back, err := png.Decode(&buf)
	require.NoError(t, err)
	require.Equal(t, img.Bounds(), back.Bounds())
	for y := range Height {
		for x := range Width {
			r0, g0, b0, _ := img.At(x, y).RGBA()
			r1, g1, b1, a1 := back.At(x, y).RGBA()
			if r0 != r1 || g0 != g1 || b0 != b1 || a1 != 0xffff {
				t.Fatalf("pixel %d,%d: drew %v, decoded %v", x, y, img.At(x, y), back.At(x, y))
			}
		}
	}
}
