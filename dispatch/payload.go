package dispatch

import "encoding/json"

// workPayload is what the queue keeps with a request besides its runbook
// and params: where to report. It is stored as JSON with the work, so a
// process reads what an older one wrote: see UnmarshalJSON.
type workPayload struct {
	Channel string          `json:"channel,omitempty"`
	Thread  string          `json:"thread,omitempty"`
	ReplyTo string          `json:"reply_to,omitempty"`
	Trigger json.RawMessage `json:"trigger,omitempty"`
	// Quiet runs post their own message only when someone must act on
	// it (Request.Quiet).
	Quiet bool `json:"quiet,omitempty"`
}

// UnmarshalJSON reads a payload as this version writes it, and as
// versions before the chat seam wrote it: with Slack's names thread_ts
// and response_url. Work queued before an upgrade still posts in its
// thread and can still tell its requester.
func (p *workPayload) UnmarshalJSON(b []byte) error {
	type current workPayload
	var v struct {
		current
		ThreadTS    string `json:"thread_ts"`
		ResponseURL string `json:"response_url"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = workPayload(v.current)
	if p.Thread == "" {
		p.Thread = v.ThreadTS
	}
	if p.ReplyTo == "" {
		p.ReplyTo = v.ResponseURL
	}
	return nil
}
