package timeline

import (
	"image/color"

	xfont "golang.org/x/image/font"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The picture is drawn at 72 dots per inch, so one vg point is one pixel
// and font sizes below are pixel heights.
const dpi = 72

// Colours (translucent ones are NRGBA: RGBA wants premultiplied values).
// Each meaning has its own colour, and the progress fill is used
// for nothing else, so that a reader (and a test) can tell progress from
// everything drawn around it.
var (
	colInk        = color.RGBA{0x21, 0x21, 0x21, 0xff}
	colMuted      = color.RGBA{0x61, 0x61, 0x61, 0xff}
	colGrid       = color.RGBA{0xe6, 0xe6, 0xe6, 0xff}
	colFrame      = color.RGBA{0xbd, 0xbd, 0xbd, 0xff}
	colLaneBG     = color.RGBA{0xfa, 0xfa, 0xfa, 0xff}
	colProgress   = color.RGBA{0x9e, 0xca, 0xe1, 0xff} // fill under the progress rate
	colProgressLn = color.RGBA{0x08, 0x51, 0x9c, 0xff}
	colStall      = color.RGBA{0xfd, 0xe0, 0xdc, 0xff}
	colLast       = color.RGBA{0xc6, 0x28, 0x28, 0xff}
	colProbeOK    = color.RGBA{0x43, 0xa0, 0x47, 0xff}
	colProbeBad   = color.RGBA{0xef, 0x6c, 0x00, 0xff}
	colBandOK     = color.NRGBA{0x43, 0xa0, 0x47, 0x38}
	colBandBad    = color.NRGBA{0xef, 0x6c, 0x00, 0x40}
	colEcho       = color.RGBA{0x54, 0x6e, 0x7a, 0xff}
	colUnexpl     = color.RGBA{0xd3, 0x2f, 0x2f, 0xff}
	colMarker     = color.RGBA{0x6a, 0x1b, 0x9a, 0xff}
	colCounter    = color.RGBA{0x00, 0x69, 0x5c, 0xff}
	colAfter      = color.RGBA{0xee, 0xee, 0xee, 0xff}
	colLabelBG    = color.NRGBA{0xff, 0xff, 0xff, 0xd8}
)

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// textStyle is a left-aligned, baseline-anchored text style of size px.
func textStyle(px float64, c color.Color, bold bool) draw.TextStyle {
	f := sans
	if bold {
		f.Weight = xfont.WeightBold
	}
	return draw.TextStyle{
		Color:   c,
		Font:    font.From(f, font.Length(px)),
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: plot.DefaultTextHandler,
	}
}

func aligned(s draw.TextStyle, x draw.XAlignment, y draw.YAlignment) draw.TextStyle {
	s.XAlign, s.YAlign = x, y
	return s
}

func line(c color.Color, width vg.Length, dashes ...vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: width, Dashes: dashes}
}
