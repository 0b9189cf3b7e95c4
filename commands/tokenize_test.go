package commands

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []string
		err  error
	}{
		{"", nil, nil},
		{"  wedge   dsv4  ", []string{"wedge", "dsv4"}, nil},
		{`run x note="a b"`, []string{"run", "x", "note=a b"}, nil},
		{`run x note='it''s'`, []string{"run", "x", "note=its"}, nil},
		{`note="say \"hi\""`, []string{`note=say "hi"`}, nil},
		{`note='no \escapes'`, []string{`note=no \escapes`}, nil},
		{`a\ b c`, []string{"a b", "c"}, nil},
		{"note=“smart quotes” next", []string{"note=smart quotes", "next"}, nil},
		{"note=‘single smart’", []string{"note=single smart"}, nil},
		{`empty=""`, []string{"empty="}, nil},
		{`""`, []string{""}, nil},
		{"x=$(rm -rf /) `id`", []string{"x=$(rm", "-rf", "/)", "`id`"}, nil},
		{"cmp <b> &", []string{"cmp", "<b>", "&"}, nil},
		{"line\nbreak\ttab", []string{"line", "break", "tab"}, nil},
		{`note="open`, nil, errUnterminatedQuote},
		{`trailing\`, []string{`trailing\`}, nil},
	}
	for _, tc := range cases {
		got, err := tokenize(tc.in)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}
