package commands

import (
	"errors"
	"strings"
)

// errUnterminatedQuote is a command with an opening quote and no closing one.
var errUnterminatedQuote = errors.New("a quote is not closed")

// quotePairs maps an opening quote to its closing one. Chat clients turn
// typed quotes into typographic ones, so those count too.
var quotePairs = map[rune]rune{'"': '"', '\'': '\'', '“': '”', '‘': '’', '”': '”', '’': '’'}

// tokenize splits command text into words the way a user expects from a
// shell, and nothing more: whitespace separates words, quotes group (also
// inside a word, as in key="a b"), a backslash escapes the next character
// inside double quotes and outside quotes. Nothing is expanded or
// executed; the words are data.
func tokenize(text string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		closing rune
		quoted  bool
		escaped bool
	)
	for _, r := range text {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quoted && r == closing:
			quoted = false
		case quoted && r == '\\' && closing == '"':
			escaped = true
		case quoted:
			cur.WriteRune(r)
		case r == '\\':
			escaped, inWord = true, true
		case quotePairs[r] != 0:
			quoted, closing, inWord = true, quotePairs[r], true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u00a0':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, errUnterminatedQuote
	}
	if escaped {
		cur.WriteRune('\\')
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
