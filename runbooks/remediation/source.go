package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runbot/runbot/store"
)

// AuditVoteSource is the audit entry that says where a vote not cast by a
// chat click came from (the CLI, a report page) and what became of it; its detail is a
// VoteSource. It follows the store's own entry of the vote (plan.approval
// or plan.approval_refused), whose actor is the same identity.
const AuditVoteSource = "plan.vote_source"

// ChannelCLI is the channel of a vote cast with runbot approve or runbot
// deny, by an OS user the config's operators: maps to an identity.
const ChannelCLI = "cli"

// ChannelWeb is the channel of a vote cast on a run's report page by a
// person signed in through the site's authenticating proxy, whom the
// config's operators: maps to an identity.
const ChannelWeb = "web"

// Vote outcomes an AuditVoteSource entry records.
const (
	// OutcomeCounted: the vote was recorded and did not settle the plan
	// (more approvals are needed, or it repeated an earlier vote).
	OutcomeCounted = "counted"
	// OutcomeApproved: the vote settled the plan as approved.
	OutcomeApproved = "approved"
	// OutcomeDenied: the vote settled the plan as denied.
	OutcomeDenied = "denied"
	// OutcomeRefused: the vote was not counted; Reason says why.
	OutcomeRefused = "refused"
)

// ErrSourceNotAudited is a vote that was recorded (or refused) while the
// entry saying where it came from could not be written: the vote stands.
var ErrSourceNotAudited = errors.New("the vote stands, but where it came from was not written to the audit log")

// Source is where a vote was cast when not by a chat click: the CLI, a
// process that records the vote and never applies the plan it settles, or
// a report page. Serve's sweep applies a plan such a vote approved at once
// (ApprovedFrom), where a plan approved by a click is left to the replica
// that took the click; serve applies a plan its own page approved at once
// too, and the store's compare-and-set lets one of the two apply it.
type Source struct {
	// Channel names where the vote was cast: ChannelCLI or ChannelWeb.
	Channel string `json:"channel"`
	// Login is the OS user (ChannelCLI) or the user the authenticating
	// proxy named (ChannelWeb) that cast it, whom the config's operators:
	// maps to the voter's identity.
	Login string `json:"login,omitempty"`
}

// VoteSource is the detail of an AuditVoteSource entry.
type VoteSource struct {
	Source
	Decision store.Decision `json:"decision"`
	PlanHash string         `json:"plan_hash"`
	Outcome  string         `json:"outcome"`
	// Reason is why a refused vote was not counted.
	Reason string `json:"reason,omitempty"`
}

// VoteFrom is Vote for a vote cast at src, away from chat: the same policy
// (approvers and groups, N of M, the two-person rule, expiry, the exact
// plan hash) decides it, and an AuditVoteSource entry records where it
// came from and its outcome after the store's own entry. A vote that failed
// for another reason than a refusal (the store is down, the plan does not
// exist) decided nothing and gets no entry. When the entry cannot be
// written the vote still stands, and the error wraps ErrSourceNotAudited.
func (r *Remediator) VoteFrom(ctx context.Context, src Source, planID, user string, approve bool, shownHash string) (store.ApprovalResult, error) {
	if src.Channel == "" {
		return store.ApprovalResult{}, errors.New("vote: the source needs a channel")
	}
	res, err := r.Vote(ctx, planID, user, approve, shownHash)
	outcome, reason := voteOutcome(res, err)
	if outcome == "" {
		return res, err
	}
	decision := store.Deny
	if approve {
		decision = store.Approve
	}
	detail, jerr := json.Marshal(VoteSource{Source: src, Decision: decision, PlanHash: shownHash, Outcome: outcome, Reason: reason})
	if jerr == nil {
		_, jerr = r.Store.AppendAudit(ctx, store.AuditEvent{At: r.now(), RunID: res.Plan.RunID, PlanID: res.Plan.ID, Kind: AuditVoteSource, Actor: user, Detail: detail})
	}
	if jerr != nil {
		return res, errors.Join(err, fmt.Errorf("%w: %w", ErrSourceNotAudited, jerr))
	}
	return res, err
}

// voteOutcome says what became of a vote, or "" when it failed without a
// decision (no refusal): then there is nothing to audit.
func voteOutcome(res store.ApprovalResult, err error) (outcome, reason string) {
	var se *store.ApprovalError
	switch {
	case err == nil && res.Settled && res.Plan.State == store.PlanApproved:
		return OutcomeApproved, ""
	case err == nil && res.Settled && res.Plan.State == store.PlanDenied:
		return OutcomeDenied, ""
	case err == nil:
		return OutcomeCounted, ""
	case errors.As(err, &se) && se.Reason == store.RefusedPolicy:
		return OutcomeRefused, se.Err.Error()
	case errors.As(err, &se):
		return OutcomeRefused, string(se.Reason)
	}
	return "", ""
}

// ApprovedFrom says whether the vote that settled a plan as approved was
// cast away from chat, and where: such a plan is applied by no process
// that took a click, so serve's sweep applies it at once. ok is false for
// a plan approved by clicks, and for one whose source entry was never
// written (it is applied as a stranded plan is).
func ApprovedFrom(ctx context.Context, audit store.AuditLog, planID string) (src Source, ok bool, err error) {
	events, err := audit.Audit(ctx, store.AuditFilter{PlanID: planID, Kind: AuditVoteSource})
	if err != nil {
		return Source{}, false, fmt.Errorf("where the approval of plan %s came from: %w", planID, err)
	}
	for _, e := range events {
		var vs VoteSource
		if json.Unmarshal(e.Detail, &vs) != nil || vs.Outcome != OutcomeApproved || vs.Channel == "" {
			continue
		}
		return vs.Source, true, nil
	}
	return Source{}, false, nil
}
