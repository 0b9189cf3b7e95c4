package yamlnode

import (
	"fmt"
	"strings"
)

// DidYouMean returns ` (did you mean "x"?)` for the candidate closest to
// word, or "" when none is close enough to be a plausible typo.
func DidYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// Suggest returns the candidate word most likely stands for: the nearest
// by edit distance, if the distance is small relative to the word's
// length, else the one candidate that word is the start of, up to a
// separator (a name given without its last part, "gpu-node" for
// "gpu-node-health").
//
// The distance allowed is a third of the word's length, rounded up: two
// edits from four characters on, so that "tset" finds "tests" (a
// transposition and a missing letter, both common), while a short word
// still needs to be nearly right.
func Suggest(word string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" && bestD <= max(1, (len([]rune(word))+2)/3) {
		return best
	}
	return cutShort(word, candidates)
}

// minCutShort is the shortest word cutShort completes: shorter ones start
// too many names to mean one.
const minCutShort = 3

// cutShort returns the one candidate that starts with word followed by a
// separator ('-', '_' or '.'), or "" when none or several do: "sglang-pd"
// starts both sglang-pd-wedge and sglang-pd-audit, and guessing one would
// mislead.
func cutShort(word string, candidates []string) string {
	if len([]rune(word)) < minCutShort {
		return ""
	}
	found := ""
	for _, c := range candidates {
		rest, ok := strings.CutPrefix(c, word)
		if !ok || rest == "" || !strings.ContainsRune("-_.", rune(rest[0])) {
			continue
		}
		if found != "" {
			return ""
		}
		found = c
	}
	return found
}

// distance is the optimal-string-alignment edit distance between a and b:
// Levenshtein plus adjacent transpositions, the commonest typo ("caht").
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
