package timeline

import (
	"os"
	"testing"
	"time"
)

func TestScratchDraw(t *testing.T) {
	out := os.Getenv("OUT")
	if out == "" {
		t.Skip()
	}
	opts := Options{}
	if w := os.Getenv("WINDOW"); w != "" {
		opts.Window, _ = time.ParseDuration(w)
	}
	rep := loadReport(t, "wedge.json")
	if os.Getenv("MARKERS") != "" {
		opts.Markers = []Marker{{Time: rep.FinishedAt.Add(40 * time.Second), Label: "systemd_restart prefill"}, {Time: rep.FinishedAt.Add(55 * time.Second), Label: "systemd_restart decode"}, {Time: rep.FinishedAt.Add(90 * time.Second), Label: "verify: serving again"}}
	}
	c, err := FromReport(rep, opts)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Create(out)
	defer f.Close()
	w, h := 1200, 800
	if os.Getenv("SMALL") != "" {
		w, h = MinWidth, MinHeight
	}
	if err := c.Render(f, w, h); err != nil {
		t.Fatal(err)
	}
}
