package bot

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/runbot/runbot/runbooks"
)

// access decides who may run which runbook from Slack.
type access struct {
	rules  []AccessRule
	groups runbooks.Groups
	slack  *slackGroups
}

// allowed reports whether user may run the runbook in channel. It fails
// closed: an error looking up a Slack user group is an error, not a yes.
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
		for _, g := range r.SlackGroups {
			in, err := a.slack.contains(ctx, g, user)
			if err != nil {
				return false, err
			}
			if in {
				return true, nil
			}
		}
	}
	return false, nil
}

// slackGroupsTTL is how long a user group's members are cached: long
// enough to spare the API on every command, short enough that removing
// someone takes effect soon.
const slackGroupsTTL = 5 * time.Minute

// slackGroups looks up Slack user group members, with a cache.
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

func (g *slackGroups) contains(ctx context.Context, group, user string) (bool, error) {
	members, err := g.members(ctx, group)
	return slices.Contains(members, user), err
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

// approverDirectory resolves runbot groups backed by Slack user groups,
// for runbooks.Remediator.Directory.
type approverDirectory struct {
	ids    map[string]string // group name -> Slack user group id
	groups *slackGroups
}

// Members implements runbooks.Directory.
func (d approverDirectory) Members(ctx context.Context, group string) ([]string, bool, error) {
	id, ok := d.ids[group]
	if !ok {
		return nil, false, nil
	}
	members, err := d.groups.members(ctx, id)
	return members, err == nil, err
}
