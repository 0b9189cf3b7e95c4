package console

import (
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

// palette holds ANSI colours, empty when output is not a terminal.
type palette struct{ red, yellow, green, dim, bold, reset string }

func colors(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{"\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[1m", "\033[0m"}
}

func sevTag(c palette, s runbooks.Severity) string {
	switch s {
	case runbooks.Critical:
		return c.red + "CRITICAL" + c.reset
	case runbooks.Warning:
		return c.yellow + "WARNING " + c.reset
	}
	return c.green + "INFO    " + c.reset
}

func statusMark(c palette, s step.Status) string {
	switch s {
	case step.OK:
		return c.green + "ok" + c.reset
	case step.Skipped:
		return c.dim + "skipped" + c.reset
	}
	return c.red + string(s) + c.reset
}
