package console_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/console"
)

func TestAuditDetail(t *testing.T) {
	t.Parallel()
	backup := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("#!/bin/sh\nexec sglang serve --port 30000\n", 20)))
	for name, tc := range map[string]struct {
		raw, want string
	}{
		"empty":              {raw: "", want: ""},
		"flat, in key order": {raw: `{"to":"done","from":"verifying"}`, want: "from=verifying to=done"},
		"numbers and spaces": {raw: `{"index":1,"summary":"restart decode","ok":true}`, want: `index=1 ok=true summary="restart decode"`},
		"a backup is cut, with its size": {
			raw:  `{"action":"config_edit","detail":{"plan":{"data":{"backup":"` + backup + `"}}}}`,
			want: fmt.Sprintf("action=config_edit detail={… %d bytes}", len(`{"plan":{"data":{"backup":"`+backup+`"}}}`)),
		},
		"a long string is cut": {
			raw:  `{"diff":"` + strings.Repeat("x", 100) + `"}`,
			want: "diff=" + strings.Repeat("x", 80) + "… (100 bytes)",
		},
		"a long string that needs quotes": {
			raw:  `{"summary":"` + strings.Repeat("a b ", 25) + `"}`,
			want: `summary="` + strings.Repeat("a b ", 20) + `"… (100 bytes)`,
		},
		"not an object": {raw: `"just text"`, want: `"just text"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, console.AuditDetail([]byte(tc.raw)))
		})
	}
}
