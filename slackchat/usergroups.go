package slackchat

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// slackGroupsTTL is how long a user group's members are cached: long
// enough to spare the API on every command, short enough that removing
// someone takes effect soon.
const slackGroupsTTL = 5 * time.Minute

// slackGroups looks up Slack user group members, with a cache, for the
// access rules of the chat commands (chat.UserGroups) and for approver
// groups backed by Slack user groups (approverDirectory).
type slackGroups struct {
	api slackAPI
	now func() time.Time

	mu    sync.Mutex
	cache map[string]groupEntry
}

type groupEntry struct {
	members []string
	at      time.Time
}

// members returns the user group's members, from the cache when fresh.
func (g *slackGroups) members(ctx context.Context, group string) ([]string, error) {
	g.mu.Lock()
	e, ok := g.cache[group]
	g.mu.Unlock()
	if !ok || g.now().Sub(e.at) > slackGroupsTTL {
		members, err := g.api.GetUserGroupMembersContext(ctx, group)
		if err != nil {
			return nil, fmt.Errorf("look up members of Slack user group %s: %w", group, err)
		}
		e = groupEntry{members: members, at: g.now()}
		g.mu.Lock()
		g.cache[group] = e
		g.mu.Unlock()
	}
	return e.members, nil
}

// ApproverDirectory resolves runbot groups backed by Slack user groups:
// set it as the remediator's Directory (it has the method that
// remediation.Directory asks for, and slackchat knows no runbooks).
type ApproverDirectory struct {
	ids    map[string]string // group name -> Slack user group id
	groups *slackGroups
}

// Members returns the members of the Slack user group that backs group;
// known is false for a group no Slack user group backs.
func (d ApproverDirectory) Members(ctx context.Context, group string) ([]string, bool, error) {
	id, ok := d.ids[group]
	if !ok {
		return nil, false, nil
	}
	members, err := d.groups.members(ctx, id)
	return members, err == nil, err
}

// UserGroupMembers implements chat.UserGroups: the members of the Slack
// user group id (S…), cached for a few minutes.
func (s *Slack) UserGroupMembers(ctx context.Context, id string) ([]string, error) {
	return s.groups.members(ctx, id)
}
