package viewer

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/wire"
)

// arrival is one event the decode loop hands the chain: a frame that
// arrived whole ("5", "5k" for a keyframe, "5b"/"5e" for a refresh's
// first/last frame) or a broken stream ("x5", "x?" when its header never
// parsed).
func feed(t *testing.T, c *chain, events string) string {
	t.Helper()
	var out []string
	for _, ev := range strings.Fields(events) {
		var s step
		if rest, ok := strings.CutPrefix(ev, "x"); ok {
			var seq uint64
			if rest != "?" {
				_, err := fmt.Sscan(rest, &seq)
				require.NoError(t, err)
			}
			s = c.broke(seq)
		} else {
			f := &frame{}
			num := strings.TrimRight(ev, "kbe")
			_, err := fmt.Sscan(num, &f.h.Seq)
			require.NoError(t, err, ev)
			for _, flag := range ev[len(num):] {
				switch flag {
				case 'k':
					f.h.Flags |= wire.FlagKeyframe
				case 'b':
					f.h.Flags |= wire.FlagRefreshBegin
				case 'e':
					f.h.Flags |= wire.FlagRefreshEnd
				}
			}
			s = c.arrived(f)
		}
		out = append(out, describe(s)...)
	}
	return strings.Join(out, " ")
}

// describe writes a step as the test's expectations do: "d5" decoded
// whole, "D5" decoded damaged, "late5"/"superseded5" dropped, "K?"/"R?"
// a keyframe or refresh asked for.
func describe(s step) []string {
	var out []string
	for _, d := range s.drops {
		out = append(out, fmt.Sprintf("%s%d", d.reason, d.seq))
	}
	for _, d := range s.decode {
		if d.damaged {
			out = append(out, fmt.Sprintf("D%d", d.f.h.Seq))
		} else {
			out = append(out, fmt.Sprintf("d%d", d.f.h.Seq))
		}
	}
	switch s.ask {
	case askKeyframe:
		out = append(out, "K?")
	case askRefresh:
		out = append(out, "R?")
	}
	return out
}

// Frame 3 is held back and arrives after 4 and 5; 7 is a keyframe.
const heldBack = "1k 2 4 5 3 6 7k 8"

func TestChainPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		events string
		want   string
	}{
		// Drop: 4 and 5 decoded without 3, damaged, each asking for a
		// keyframe; 3 late; damaged until the keyframe.
		{PolicyDrop, heldBack, "d1 d2 D4 K? D5 K? late3 D6 K? d7 d8"},
		// Wait: 4 and 5 wait for 3, then all three decode in order.
		{PolicyWait, heldBack, "d1 d2 d3 d4 d5 d6 d7 d8"},
		// Keyframe: 4 arrives without 3: ask at once, show nothing until
		// the keyframe; 3, 4, 5 and 6 are superseded by it.
		{PolicyKeyframe, heldBack, "d1 d2 K? superseded3 superseded4 superseded5 superseded6 d7 d8"},
		// A frame coded after the keyframe that arrives before it waits
		// for it.
		{PolicyKeyframe, "1k 2 4 3 6k 5 7", "d1 d2 K? superseded3 superseded4 d6 late5 d7"},
		{PolicyKeyframe, "1k 2 4 3 7 6k 8", "d1 d2 K? superseded3 superseded4 d6 d7 d8"},
		// Refresh: damaged from 4, a refresh asked for; a refresh decoded
		// whole (6b to 8e) repairs it.
		{PolicyRefresh, "1k 2 4 3 5 6b 7 8e 9", "d1 d2 D4 R? late3 D5 R? D6 D7 d8 d9"},
		// A refresh with a frame missing does not repair: 7 is late.
		{PolicyRefresh, "1k 2 4 3 5 6b 8 7 9e 10", "d1 d2 D4 R? late3 D5 R? D6 D8 R? late7 D9 R? D10 R?"},
		// A refresh that begins on a whole picture changes nothing.
		{PolicyRefresh, "1k 2b 3e 4", "d1 d2 d3 d4"},
	} {
		t.Run(string(tc.policy)+" "+tc.events, func(t *testing.T) {
			require.Equal(t, tc.want, feed(t, newChain(tc.policy, false), tc.events))
		})
	}
}

// A frame whose stream broke never comes: waiting for it would wait for
// ever, so every policy asks for a keyframe (refresh: a refresh).
func TestChainLostFrames(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		events string
		want   string
	}{
		{PolicyDrop, "1k 2 x3 4 5k 6", "d1 d2 K? D4 K? d5 d6"},
		{PolicyWait, "1k 2 x3 4 5k 6", "d1 d2 K? superseded4 d5 d6"},
		// 4 arrives before the news of 3: it waits, then the loss makes
		// the wait hopeless.
		{PolicyWait, "1k 2 4 x3 5k", "d1 d2 K? superseded4 d5"},
		{PolicyKeyframe, "1k 2 x3 4 5k", "d1 d2 K? superseded4 d5"},
		{PolicyRefresh, "1k 2 x3 4", "d1 d2 R? D4 R?"},
		// A header that never parsed names no frame: the chain cannot
		// know which is missing, and waits for the keyframe it asked for.
		{PolicyWait, "1k 2 x? 3 4k", "d1 d2 K? superseded3 d4"},
		// News of a frame already decoded past changes nothing.
		{PolicyDrop, "1k 2 3 x2 4", "d1 d2 d3 d4"},
	} {
		t.Run(string(tc.policy)+" "+tc.events, func(t *testing.T) {
			require.Equal(t, tc.want, feed(t, newChain(tc.policy, false), tc.events))
		})
	}
}

// N8's old viewer decodes every frame in arrival order: nothing is late,
// but a frame decoded before its reference is damaged all the same.
func TestChainInOrderDecodesEverything(t *testing.T) {
	require.Equal(t, "d1 d2 D4 K? D5 K? D3 K? D6 K? d7 d8", feed(t, newChain(PolicyDrop, true), heldBack))
}

// The damage's age counts the damaged frames since the chain broke.
func TestChainDamageAge(t *testing.T) {
	c := newChain(PolicyDrop, false)
	var ages []int
	for _, seq := range []uint64{1, 2, 4, 5, 6, 8, 9} {
		f := &frame{}
		f.h.Seq = seq
		if seq == 1 || seq == 8 {
			f.h.Flags = wire.FlagKeyframe
		}
		for _, d := range c.arrived(f).decode {
			ages = append(ages, d.age)
		}
	}
	require.Equal(t, []int{0, 0, 1, 2, 3, 0, 0}, ages)
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range append(Policies, "") {
		require.NoError(t, p.validate())
	}
	require.ErrorContains(t, Policy("hold").validate(), `unknown policy "hold"`)
	_, err := New(Config{Policy: "hold"})
	require.ErrorIs(t, err, ErrConfig)
}

// A goroutine waiting for the control stream's lock is durably blocked, so
// the bubble's clock goes on while a write holds it (with a sync.Mutex
// this test would never end: time.Sleep would wait for a clock that stood
// still).
func TestControlLockLetsTimeAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := make(chanLock, 1)
		l.Lock()
		got := make(chan time.Duration)
		start := time.Now()
		go func() {
			l.Lock()
			got <- time.Since(start)
			l.Unlock()
		}()
		time.Sleep(time.Second)
		l.Unlock()
		require.Equal(t, time.Second, <-got)
	})
}
