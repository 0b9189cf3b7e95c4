package commands

import (
	"context"
	"fmt"
	"slices"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks/remediation"
)

// AccessRule allows some people to run some runbooks, optionally only in
// some channels. A request is allowed when any rule allows it.
type AccessRule struct {
	// Runbooks are runbook names; "*" is every runbook.
	Runbooks []string
	// Users are the chat's user IDs.
	Users []string
	// Groups name entries of Config.Groups.
	Groups []string
	// UserGroups are the chat platform's user groups, by its id (Slack
	// user groups, S…), looked up when the rule is checked.
	UserGroups []string
	// Channels are channel IDs the rule applies in; empty is any channel.
	Channels []string
}

// access decides who may run which runbook from the chat.
type access struct {
	rules  []AccessRule
	groups remediation.Groups
	chat   chat.UserGroups
}

// allowed reports whether user may run the runbook in channel. It fails
// closed: an error looking up a user group is an error, not a yes.
func (a *access) allowed(ctx context.Context, runbook, user, channel string) (bool, error) {
	for _, r := range a.rules {
		if !slices.Contains(r.Runbooks, "*") && !slices.Contains(r.Runbooks, runbook) {
			continue
		}
		if len(r.Channels) > 0 && !slices.Contains(r.Channels, channel) {
			continue
		}
		if slices.Contains(r.Users, user) {
			return true, nil
		}
		for _, g := range r.Groups {
			if slices.Contains(a.groups[g], user) {
				return true, nil
			}
		}
		for _, g := range r.UserGroups {
			if a.chat == nil {
				return false, fmt.Errorf("look up user group %s: the chat has no user groups", g)
			}
			members, err := a.chat.UserGroupMembers(ctx, g)
			if err != nil {
				return false, err
			}
			if slices.Contains(members, user) {
				return true, nil
			}
		}
	}
	return false, nil
}
