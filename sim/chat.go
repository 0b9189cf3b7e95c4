package sim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// chatRequest is the subset of an OpenAI chat completion request the simulator
// reads, plus the PD fields the router adds (bootstrap_host/port/room) and SGLang's
// own "rid".
type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           *int          `json:"max_tokens"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	Rid                 string        `json:"rid"`
	User                string        `json:"user"`
	BootstrapHost       string        `json:"bootstrap_host"`
	BootstrapPort       *int          `json:"bootstrap_port"`
	BootstrapRoom       *uint64       `json:"bootstrap_room"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// maxBodyBytes bounds a request body; the simulator has no use for huge prompts.
const maxBodyBytes = 4 << 20

func decodeChatRequest(r *http.Request) (*chatRequest, error) {
	var c chatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes)).Decode(&c); err != nil {
		return nil, fmt.Errorf("invalid JSON body: %w", err)
	}
	// Reading the body to its end lets the HTTP server watch the connection, so a
	// client that goes away cancels the request context: that is how an abort starts.
	_, _ = io.Copy(io.Discard, r.Body)
	return &c, nil
}

// promptTokens estimates the prompt length the way a tokenizer roughly would:
// about four characters per token plus a few tokens of chat template per message.
func (c *chatRequest) promptTokens() int {
	n := 0
	for _, m := range c.Messages {
		n += 4 + len(m.Content)/4
	}
	return max(n, 1)
}

// maxTokens returns the requested completion length, bounded so that one request
// cannot hold the simulator for hours.
func (c *chatRequest) maxTokens(def int) int {
	n := def
	switch {
	case c.MaxCompletionTokens != nil:
		n = *c.MaxCompletionTokens
	case c.MaxTokens != nil:
		n = *c.MaxTokens
	}
	return min(max(n, 1), 8192)
}

// requestID picks the rid an engine logs for a request. A real engine mints its own
// (uuid4().hex) and takes an id only from the body's "rid": the X-Request-Id header
// is ignored (serving_base.py@012bcb5f; open PR #36189), and the 2026 gateway strips
// "rid" from chat requests before they get here. Mode "client" is the simulator's
// older, friendlier rule, kept for tests that follow their own requests by id: the
// X-Request-Id header, then the body's "rid", then its "user".
func requestID(r *http.Request, c *chatRequest, mode string) string {
	ids := []string{c.Rid}
	if mode == RequestIDsClient {
		ids = []string{r.Header.Get("X-Request-Id"), c.Rid, c.User}
	}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			return id
		}
	}
	return newRID()
}

func newRID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// filler words make up the generated text; the content is irrelevant, its pacing is not.
var filler = strings.Fields("the decode engine streams one token per iteration while the prefill engine " +
	"computes the prompt and hands its kv cache over the transfer backend to decode")

func tokenText(i int) string { return " " + filler[i%len(filler)] }

// apiError writes an error in SGLang's OpenAI-compatible error shape.
func apiError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "error", "message": msg, "type": typ, "param": nil, "code": code,
	})
}

// completion is a non-streaming chat completion response.
func completion(rid, model, content string, prompt, completionTokens int, finish string) map[string]any {
	return map[string]any{
		"id": rid, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": content, "reasoning_content": nil, "tool_calls": nil},
			"logprobs":      nil,
			"finish_reason": finish,
			"matched_stop":  nil,
		}},
		"usage": map[string]any{
			"prompt_tokens": prompt, "completion_tokens": completionTokens,
			"total_tokens": prompt + completionTokens, "prompt_tokens_details": nil,
		},
	}
}

// sseChunk renders one server-sent event of a streaming chat completion.
func sseChunk(rid, model, role, content string, finish any) []byte {
	delta := map[string]any{}
	if role != "" {
		delta["role"] = role
	}
	if content != "" || finish == nil {
		delta["content"] = content
	}
	b, _ := json.Marshal(map[string]any{
		"id": rid, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish, "matched_stop": nil}},
		"usage":   nil,
	})
	return append(append([]byte("data: "), b...), '\n', '\n')
}
