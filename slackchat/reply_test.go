package slackchat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// When the run's message cannot be posted, the run still happens and the
// requester is told why through the command's response_url: the reply
// target the slash command carried reaches Slack's Reply.
func TestRunGoesOnWhenChannelRefusesThePost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rec.FailNext("chat.postMessage", slackrec.Failure{Error: "not_in_channel"})
	h.command(requester, "stuck here "+h.dir)
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFinished, runs[0].Status)
	require.Nil(t, runs[0].Message)
	told := h.rec.Calls("response_url")
	require.Len(t, told, 1)
	require.Contains(t, told[0].Text(), "not_in_channel")
	require.Contains(t, string(told[0].Body), `"response_type":"ephemeral"`)
	require.Empty(t, h.rec.Calls("chat.update"))
}

// One 500 from Slack on a run's first post, or on the private reply to a
// requester, is tried again a second later and gets through: a moment's
// hiccup loses nothing.
func TestServerErrorIsTriedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rec.FailNext("chat.postMessage", slackrec.Failure{Status: 500})
	h.command(requester, "stuck here "+h.dir)
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.NotNil(t, runs[0].Message, "the run's message was posted on the second try")
	posts := h.rec.Calls("chat.postMessage")
	require.Len(t, posts, 2)
	require.Equal(t, 500, posts[0].Status)
	require.Equal(t, 200, posts[1].Status)
	require.Equal(t, posts[1].TS, runs[0].Message.ID)
}
