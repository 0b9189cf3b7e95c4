package timeline

import (
	"flag"
	"image"
	_ "image/png"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateSample = flag.Bool("update-sample", false, "rewrite docs/timeline-wedge.png from testdata/wedge.json")

// samplePath is the picture the README shows.
const samplePath = "../docs/timeline-wedge.png"

// TestSamplePicture keeps the documented sample a picture of the recorded
// wedge at the default size; run with -update-sample to redraw it.
func TestSamplePicture(t *testing.T) {
	if *updateSample {
		require.NoError(t, WritePNG(samplePath, loadReport(t, "wedge.json"), Options{}))
	}
	f, err := os.Open(samplePath)
	require.NoError(t, err, "redraw it: go test ./timeline -run TestSamplePicture -update-sample")
	defer func() { _ = f.Close() }()
	cfg, format, err := image.DecodeConfig(f)
	require.NoError(t, err)
	require.Equal(t, "png", format)
	require.Equal(t, image.Pt(Width, Height), image.Pt(cfg.Width, cfg.Height))
}
