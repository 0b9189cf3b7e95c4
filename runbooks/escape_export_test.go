package runbooks

import (
	"errors"

	"github.com/runbot/runbot/runbooks/escape"
)

// TemplateProblemOffset returns the byte offset in the template's source
// that a parse problem points at, for tests of where lint reports it.
func TemplateProblemOffset(err error) (int, bool) {
	var tp *escape.Problem
	if errors.As(err, &tp) {
		return tp.Offset, true
	}
	return 0, false
}
