package sim

import (
	"math"
	"strconv"
	"strings"
)

// pyStr renders s the way Python's repr() renders a str: single quotes unless the
// string contains a single quote and no double quote.
func pyStr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\t", `\t`)
	return "'" + r.Replace(s) + "'"
}

// pyBool renders a bool as Python does.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyFloatRepr renders f as Python's repr(float) does: the shortest round-tripping
// digits, always with a decimal point or an exponent.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go prints e-05 and e+16 like Python, so only the mantissa needs no change.
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// promFloat renders a sample value the way the Python prometheus_client does
// (floatToGoString): Python's repr, switched to an exponent earlier, like Go.
func promFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	s := pyFloatRepr(f)
	dot := strings.Index(s, ".")
	if f > 0 && dot > 6 && !strings.Contains(s, "e") {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mantissa + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}
