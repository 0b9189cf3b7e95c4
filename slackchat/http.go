package slackchat

import (
	"encoding/json"
	"net/http"

	"github.com/slack-go/slack"
)

// serveCommand answers a verified slash command request with its
// ephemeral reply; a run it starts continues after the response.
func (b *Receiver) serveCommand(w http.ResponseWriter, r *http.Request) {
	sc, err := slack.SlashCommandParse(r)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
		b.log.Info("slack redelivered a command", "retry", n, "reason", r.Header.Get("X-Slack-Retry-Reason"))
	}
	b.log.Info("slash command", "user", sc.UserID, "channel", sc.ChannelID, "command", sc.Command)
	writeJSON(w, b.msgr.reply(b.command(r.Context(), sc)))
}

// serveInteraction acknowledges a verified button click once the handler
// has recorded it (a vote is in the store before Slack hears 200); the
// rest is handled in the background.
func (b *Receiver) serveInteraction(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(r.PostForm.Get("payload")), &cb); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	b.interaction(r.Context(), cb)
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
