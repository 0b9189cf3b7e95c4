package chat_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
)

// In the terminal rendering a code span is between backticks, and data's
// own backticks stay as they are.
func TestCodeInText(t *testing.T) {
	m := chat.Message{Title: "Queued", Notes: []string{chat.Code("/runbot status r-1") + " shows its result."}, Facts: []chat.Fact{{Label: "Note", Text: "a `b`"}}}
	text := m.Text()
	require.Contains(t, text, "│ `/runbot status r-1` shows its result.\n")
	require.Contains(t, text, "Note: a `b`")
	require.NotContains(t, text, string(chat.CodeOpen))
}
