package config

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/yamlnode"
)

// osUserName is the shape of a login name on runbot's host: POSIX's
// portable user names, with the trailing $ Samba's machine accounts use.
// A key of operators: that cannot be a login would never match anyone,
// so it is reported rather than silently ignored.
var osUserName = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._-]*\$?$`)

// decodeOperators reads operators:, the OS users of runbot's host that may
// vote from the CLI (runbot approve, runbot deny), each mapped to the one
// identity approval policies name them by:
//
//	operators:
//	  alice: U01ALICE
//
// The identity is a person's, never a group's: a vote is one person's, and
// the two-person rule compares people.
func decodeOperators(d *yamlnode.Decoder, c *Config, n *yaml.Node) {
	c.Operators = map[string]string{}
	d.Pairs(n, "operators", func(login string, k, v *yaml.Node) {
		what := "operators." + login
		c.At[what] = yamlnode.PosOf(v)
		if !osUserName.MatchString(login) {
			d.Errorf(k, "operators: %q is not an OS user name (letters, digits, '.', '_' and '-', not starting with '-')", login)
			return
		}
		id := d.String(v, what)
		switch {
		case v.Kind != yaml.ScalarNode || v.Tag == "!!null":
			// String reported it.
			return
		case id == "":
			d.Errorf(v, "%s: give the identity approval policies name %s by, such as a Slack user id U01ALICE", what, login)
			return
		case strings.ContainsFunc(id, unicode.IsSpace):
			d.Errorf(v, "%s: %q has a space in it; an identity is one word, such as a Slack user id U01ALICE", what, id)
			return
		case strings.HasPrefix(id, "@") || strings.HasPrefix(id, "group:"):
			d.Errorf(v, "%s: %q names a group; map an OS user to one person's identity (a Slack user id such as U01ALICE), which groups: may list", what, id)
			return
		}
		c.Operators[login] = id
	})
}

// UnknownOperatorError is a vote from an OS user operators: does not map.
type UnknownOperatorError struct {
	// File is the config, Login the OS user.
	File, Login string
	// At is where operators: was written; zero when the config has none.
	At yamlnode.Pos
}

func (e *UnknownOperatorError) Error() string {
	if e.At.Line == 0 {
		return fmt.Sprintf("%s: no operators: mapping, so OS user %q may not vote from the CLI; add one mapping it to the identity approval policies name (operators: {%s: U01ALICE})",
			e.File, e.Login, e.Login)
	}
	return fmt.Sprintf("%s:%d:%d: operators: has no entry for OS user %q, so it may not vote from the CLI; add %q mapped to the identity approval policies name (%s: U01ALICE)",
		e.File, e.At.Line, e.At.Col, e.Login, e.Login, e.Login)
}

// Operator returns the identity OS user login votes as from the CLI, or an
// *UnknownOperatorError naming the file and the key when operators: does
// not map it.
func (c *Config) Operator(login string) (string, error) {
	if id, ok := c.Operators[login]; ok {
		return id, nil
	}
	e := &UnknownOperatorError{File: c.File, Login: login}
	if p, ok := c.At["operators"]; ok {
		e.At = p
	}
	return "", e
}
