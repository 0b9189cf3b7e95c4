package bot

import (
	"fmt"
	"testing"
)

func TestZZDebug(t *testing.T) {
	h := newHarness(t)
	_, ts := h.runOnce("")
	fmt.Println(h.lastMessage(ts).Text())
	value := buttonValue(t, h.lastMessage(ts), actionApprove)
	h.click(approverA, actionApprove, value, ts)
	h.click(approverB, actionApprove, value, ts)
	h.idle()
	fmt.Println("=====")
	fmt.Println(h.lastMessage(ts).Form.Get("blocks"))
	fmt.Println("=====")
	for _, c := range h.rec.Calls() { fmt.Println(c.Method, c.Form.Get("ts"), len(c.Text())) }
	fmt.Println(h.logs.String())
}
