// Package shell quotes values for a POSIX shell, so that text from outside
// (runbook params, alert labels, chat text) reaches a remote shell as one
// literal word and is never interpreted.
package shell

import "strings"

// Quote returns s as a single POSIX shell word. Plain words made only of
// characters that no shell treats specially are returned as they are, so that
// plans stay readable; everything else is wrapped in single quotes, with each
// embedded single quote written as '\”.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isPlain(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes every argument and joins them with spaces into one command line.
func Join(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

func isPlain(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("-_./:=@%+,", r):
		default:
			return false
		}
	}
	// A leading '-' is fine for the shell; a leading '=' or '%' is not special
	// either, but '~' would be, and it is excluded above.
	return true
}
