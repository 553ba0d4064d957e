package scenarios

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBrokenFiles loads one file per kind of mistake (testdata/broken) and
// checks each error word for word: file, line, field and message, and the
// printed form.
func TestBrokenFiles(t *testing.T) {
	const dir = "testdata/broken/"
	for _, tc := range []struct {
		file string
		want []Error
	}{
		{"unknown-key.yaml", []Error{{dir + "unknown-key.yaml", 8, "network.down[0].los",
			`unknown key "los": did you mean loss? allowed keys: at, delay, jitter, loss, gilbert, duplicate, corrupt, rate, overhead, trace, queue, spikes, outages, block_udp`}}},
		{"missing-unit.yaml", []Error{{dir + "missing-unit.yaml", 5, "network.down.loss",
			"1 is missing a unit: expected a percentage like 1% or 0.1%"}}},
		{"wrong-unit.yaml", []Error{{dir + "wrong-unit.yaml", 7, "network.both.rate",
			"25ms has the wrong unit: expected a rate like 5Mbit/s, 500kbit/s or 1Gbit/s, not a duration"}}},
		{"loss-out-of-range.yaml", []Error{{dir + "loss-out-of-range.yaml", 7, "network.down[0].loss",
			"120% out of range: expected a percentage from 0% to 100%"}}},
		{"negative-rate.yaml", []Error{{dir + "negative-rate.yaml", 5, "network.up.rate",
			"-5Mbit/s out of range: expected a rate of 0bit/s or more, like 5Mbit/s, 500kbit/s or 1Gbit/s"}}},
		{"queue-packets-zero.yaml", []Error{{dir + "queue-packets-zero.yaml", 7, "network.down.queue.packets",
			"0 out of range: expected a number of packets from 1 to 2147483647 (a queue of 0 packets holds nothing; leave packets out for no limit)"}}},
		{"missing-name.yaml", []Error{{dir + "missing-name.yaml", 1, "name",
			"missing required field: expected lower-case words joined by '-', like lan-animation"}}},
		{"unknown-measurement.yaml", []Error{{dir + "unknown-measurement.yaml", 6, "expect[1].measure",
			`unknown measurement "latency.mean": did you mean latency.median? expected one of ` + measurementNames()}}},
		{"expect-wrong-unit.yaml", []Error{{dir + "expect-wrong-unit.yaml", 6, "expect[0].max",
			"50% has the wrong unit: expected a duration like 25ms, 1.5s or 500us, not a percentage"}}},
		{"expect-missing-key.yaml", []Error{{dir + "expect-missing-key.yaml", 6, "expect[1].latency",
			"missing required field: recovery.under needs latency: expected the latency bound, like 150ms"}}},
		{"expect-key-not-read.yaml", []Error{{dir + "expect-key-not-read.yaml", 6, "expect[0].latency",
			"latency does not apply to latency.median: latency applies to latency.time-above or recovery.under"}}},
		// A bound is a band (measured) or a requirement, not both, and an
		// expected failure is a requirement.
		{"expect-band-required.yaml", []Error{{dir + "expect-band-required.yaml", 6, "expect[1].band",
			"a band is not required: expected band (bounds measured from this scenario's runs) or required (what requires the bound), not both"}}},
		{"expect-band-expected-failure.yaml", []Error{{dir + "expect-band-expected-failure.yaml", 7, "expect[0].band",
			"a band cannot be an expected failure: it is what the runs measured, and an expected failure is a requirement the product misses"}}},
		{"phases-out-of-order.yaml", []Error{{dir + "phases-out-of-order.yaml", 8, "network.down[2].at",
			"2s out of order: expected a time after the previous one, 5s"}}},
		{"unknown-finding.yaml", []Error{{dir + "unknown-finding.yaml", 4, "findings[1]",
			`unknown finding "N21": expected N1-N20 or E1-E14, the IDs of FINDINGS.md`}}},
		{"trace-and-rate.yaml", []Error{{dir + "trace-and-rate.yaml", 7, "network.down.trace",
			"trace and rate together: a trace is the link's capacity; expected one or the other"}}},
		// A trace is opened and parsed at load: its path counts from the
		// scenario file's folder (here testdata/broken).
		{"trace-missing.yaml", []Error{{dir + "trace-missing.yaml", 7, "network.down.trace",
			"no trace file at " + absPath(t, "testdata/traces/missing.down") + ": a relative path counts from the scenario file's folder"}}},
		{"trace-malformed.yaml", []Error{{dir + "trace-malformed.yaml", 7, "network.down.trace.file",
			"malformed trace: " + absPath(t, "testdata/traces/malformed.down") + `:4: "fast" is not a number; expected one timestamp per line: a non-negative whole number of milliseconds`}}},
		{"trace-offset-past-end.yaml", []Error{{dir + "trace-offset-past-end.yaml", 9, "network.down.trace.offset",
			"25s out of range: expected an offset below the trace's length, 20s"}}},
		{"trace-unknown-key.yaml", []Error{{dir + "trace-unknown-key.yaml", 7, "network.down.trace.ofset",
			`unknown key "ofset": did you mean offset? allowed keys: file, offset, loop`}}},
		{"abr-key-on-fixed.yaml", []Error{{dir + "abr-key-on-fixed.yaml", 7, "controller.min",
			"min does not apply to kind fixed: min applies to kind abr or gcc"}}},
		{"frame-sizes-on-real-encoder.yaml", []Error{{dir + "frame-sizes-on-real-encoder.yaml", 6, "agent.frame_sizes",
			"frame_sizes does not apply to openh264-real: its frames are a real encoder's bytes, not the H.264 model's"}}},
		{"refresh-on-lossless.yaml", []Error{{dir + "refresh-on-lossless.yaml", 6, "viewer.policy",
			"refresh needs an encoder with a rolling intra refresh: the H.264 model has one, lossless-tile has none (use drop, wait or keyframe)"}}},
		{"unknown-policy.yaml", []Error{{dir + "unknown-policy.yaml", 4, "viewer.policy",
			`unknown viewer policy "hold": expected one of drop, wait, keyframe, refresh`}}},
		{"min-above-max.yaml", []Error{{dir + "min-above-max.yaml", 6, "controller.min",
			"5Mbit/s is greater than max 1Mbit/s: expected min <= max"}}},
		{"decrease-out-of-range.yaml", []Error{{dir + "decrease-out-of-range.yaml", 7, "controller.decrease",
			"120% out of range: expected a decrease above 0% and below 100%"}}},
		{"abr-switch-with-fixed.yaml", []Error{{dir + "abr-switch-with-fixed.yaml", 7, "switches.old_abr_single_peaks",
			"old_abr_single_peaks does not apply to controller kind fixed: old_abr_single_peaks applies to controller kind abr"}}},
		{"traffic-key-of-another-kind.yaml", []Error{{dir + "traffic-key-of-another-kind.yaml", 7, "traffic[0].rate",
			"rate does not apply to kind tcp-bulk: rate applies to kind cbr"}}},
		{"traffic-stop-before-start.yaml", []Error{{dir + "traffic-stop-before-start.yaml", 5, "traffic[0].stop",
			"5s is not after start 10s: expected a flow that stops after it starts"}}},
		{"traffic-name-twice.yaml", []Error{{dir + "traffic-name-twice.yaml", 6, "traffic[1].name",
			"flow download is named twice: expected a name of its own (results, measurements and captures tell flows apart by it)"}}},
		{"traffic-cbr-without-rate.yaml", []Error{{dir + "traffic-cbr-without-rate.yaml", 5, "traffic[0].rate",
			"missing required field: expected the bit rate, like 1Mbit/s"}}},
		{"traffic-unknown-kind.yaml", []Error{{dir + "traffic-unknown-kind.yaml", 5, "traffic[0].kind",
			`unknown flow kind "tcp-buk": did you mean tcp-bulk? expected one of quic-bulk, tcp-bulk, cbr, web, session, reverse-media`}}},
		{"expect-unknown-flow.yaml", []Error{{dir + "expect-unknown-flow.yaml", 7, "expect[0].flow",
			`unknown flow "dowload": did you mean download? expected main or a flow of traffic: main, download`}}},
		{"bad-syntax.yaml", []Error{{dir + "bad-syntax.yaml", 5, "",
			"bad YAML syntax: did not find expected ',' or '}'"}}},
		{"from-defaults/scenario.yaml", []Error{{dir + "from-defaults/defaults.yaml", 4, "agent.send_cap",
			`256kb has an unknown unit "kb": expected a size like 256KB, 1MB or 28B`}}},
		// Several mistakes in one file: all of them, in line order, whether
		// the value's own check or a check across fields found them.
		{"several-errors.yaml", []Error{
			{dir + "several-errors.yaml", 4, "groups[1]",
				`unknown group "wan": did you mean lan? expected one of mobile, lan, lossy, pipeline, encoder, path, cellular, abr, traffic, rmcat, real`},
			{dir + "several-errors.yaml", 7, "network.down[0].delay",
				"25 ms has a space before its unit: expected a duration like 25ms, 1.5s or 500us"},
			{dir + "several-errors.yaml", 8, "network.down[1].gilbert",
				"gilbert and loss together: expected one loss model, Gilbert-Elliott or independent loss"},
			{dir + "several-errors.yaml", 10, "screen[0].complexity",
				"complexity does not apply to still: complexity applies to animation, typing, scrolling, video, photo"},
			{dir + "several-errors.yaml", 12, "expect[0].to",
				"2s is not after from 5s: expected a window that ends after it starts"},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s, err := LoadFile(dir + tc.file)
			require.Nil(t, s)
			var lines []string
			var got []Error
			for _, e := range Errors(err) {
				got = append(got, *e)
			}
			for _, e := range tc.want {
				lines = append(lines, e.File+":"+itoa(e.Line)+": "+strings.TrimPrefix(e.Field+": ", ": ")+e.Msg)
			}
			require.Equal(t, tc.want, got)
			require.EqualError(t, err, strings.Join(lines, "\n"))
		})
	}
}

func measurementNames() string {
	var names []string
	for _, m := range Measurements {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// TestMistakes covers the other kinds of mistake on small inline files:
// one message each, word for word, with its line and field.
func TestMistakes(t *testing.T) {
	const head = "name: t\ndescription: d\nduration: 20s\n" // lines 1-3
	for _, tc := range []struct{ name, body, want string }{
		{"unknown source", "screen: [{source: animaton}]",
			`f.yaml:4: screen[0].source: unknown source "animaton": did you mean animation? expected one of animation, still, typing, scrolling, video, photo, recording`},
		{"unknown group", "groups: [Mobile]",
			`f.yaml:4: groups[0]: unknown group "Mobile": did you mean mobile? expected one of mobile, lan, lossy, pipeline, encoder, path, cellular, abr, traffic, rmcat, real`},
		{"unknown distribution", "network: {down: {jitter: {spread: 5ms, distribution: gaussian}}}",
			`f.yaml:4: network.down.jitter.distribution: unknown distribution "gaussian": expected one of uniform, normal, pareto-normal, truncated-normal`},
		{"unknown preset", "agent: {encoder: x264}",
			`f.yaml:4: agent.encoder: unknown encoder preset "x264": expected one of busy-pc, lossless-hextile, lossless-tile, lossless-zrle, openh264, openh264-asm, openh264-real, openh264-real-1080p, openh264-real-noskip`},
		{"hardware preset as encoder", "agent: {encoder: nvenc}",
			"f.yaml:4: agent.encoder: nvenc is a hardware preset: list it under hardware; encoder takes a software preset, one of busy-pc, lossless-hextile, lossless-tile, lossless-zrle, openh264, openh264-asm, openh264-real, openh264-real-1080p, openh264-real-noskip"},
		{"encode time of a lossless encoder", "agent:\n  encoder: lossless-zrle\n  encode_time: 5ms",
			"f.yaml:6: agent.encode_time: encode_time does not apply to lossless-zrle: a lossless encoder's encode time comes from its codec's measured throughput"},
		{"restart switch with a lossless encoder", "agent: {encoder: lossless-tile}\nswitches: {old_restart_on_bitrate_change: true}",
			"f.yaml:5: switches.old_restart_on_bitrate_change: old_restart_on_bitrate_change does not apply to lossless-tile: a lossless encoder has no rate control to restart"},
		{"absent not in hardware", "agent: {hardware: [nvenc], absent: [quicksync]}",
			"f.yaml:4: agent.absent[0]: quicksync is not listed in hardware: absent names hardware the agent probes, expected one of [nvenc]"},
		{"spikes min above max", "network: {down: {spikes: {min: 600ms, max: 150ms, every: 3s, duration: 200ms}}}",
			"f.yaml:4: network.down.spikes.min: 600ms is greater than max 150ms: expected min <= max"},
		{"spikes missing every", "network:\n  down:\n    spikes: {max: 150ms, duration: 200ms}",
			"f.yaml:6: network.down.spikes.every: missing required field: expected the interval between spikes, like 3s"},
		{"duration zero", "!name: t\ndescription: d\nduration: 0s",
			"f.yaml:3: duration: 0s out of range: expected a duration above 0s"},
		{"bad name", "!name: LAN animation\ndescription: d\nduration: 1s",
			`f.yaml:1: name: "LAN animation" is not a valid name: expected lower-case words joined by '-', like lan-animation`},
		{"negative delay", "network: {down: {delay: -5ms}}",
			"f.yaml:4: network.down.delay: -5ms out of range: expected a duration of 0s or more"},
		{"rate zero", "network: {down: {rate: 0Mbit/s}}",
			"f.yaml:4: network.down.rate: 0Mbit/s out of range: expected a rate above 0bit/s (leave rate out, or null, for no cap)"},
		{"queue without bottleneck", "network: {down: {queue: {packets: 100}}}",
			"f.yaml:4: network.down.queue: queue without rate or trace: a queue forms only at a bottleneck"},
		{"loss with gilbert", "network: {down: {loss: 1%, gilbert: {p: 1%}}}",
			"f.yaml:4: network.down.gilbert: gilbert and loss together: expected one loss model, Gilbert-Elliott or independent loss"},
		{"phase after the end", "network: {down: [{delay: 1ms}, {at: 20s, delay: 2ms}]}",
			"f.yaml:4: network.down[1].at: 20s is not before the end: the scenario lasts 20s"},
		{"later phase without at", "network:\n  down:\n    - {delay: 1ms}\n    - {delay: 2ms}",
			"f.yaml:7: network.down[1].at: missing required field: expected the instant the phase starts, like 10s (only the first phase may leave it out)"},
		{"both never used", "network: {both: {delay: 1ms}, up: {delay: 2ms}, down: {delay: 3ms}}",
			"f.yaml:4: network.both: both is never used: up and down are both given"},
		{"region off screen", "screen: [{source: video, region: {x: 60%, y: 0%, w: 50%, h: 50%}}]",
			"f.yaml:4: screen[0].region.w: x 60% + w 50% is past the screen's right edge: expected x + w <= 100%"},
		{"region missing h", "screen: [{source: video, region: {x: 0%, y: 0%, w: 50%}}]",
			"f.yaml:4: screen[0].region.h: missing required field: expected the height as a percentage of the screen's height, like 50%"},
		{"screen rate too high", "screen: [{source: animation, rate: 1000}]",
			"f.yaml:4: screen[0].rate: 1000 out of range: expected changes per second above 0 and at most 600 (ten per refresh)"},
		{"expectation without bound", "expect: [{measure: fps}]",
			"f.yaml:4: expect[0]: missing a bound: expected min, max or both"},
		{"expectation min above max", "expect: [{measure: latency.median, min: 20ms, max: 10ms}]",
			"f.yaml:4: expect[0].min: 20ms is greater than max 10ms: expected min <= max"},
		{"expectation count with unit", "expect: [{measure: frames.dropped, max: 0ms}]",
			"f.yaml:4: expect[0].max: 0ms has a unit, but frames.dropped is a count: expected a plain whole number like 100"},
		{"expectation missing unit", "expect: [{measure: latency.median, max: 150}]",
			"f.yaml:4: expect[0].max: 150 is missing a unit: expected a duration like 25ms, 1.5s or 500us"},
		{"expectation after the end", "expect: [{measure: fps, min: 1, to: 30s}]",
			"f.yaml:4: expect[0].to: 30s is after the end: the scenario lasts 20s (write end for the end)"},
		{"instant missing", "expect: [{measure: bitrate.target, max: 2Mbit/s}]",
			"f.yaml:4: expect[0].at: missing required field: bitrate.target needs at: expected the instant, like 10s"},
		{"instant at zero", "expect: [{measure: bitrate.sent, at: 0s, max: 2Mbit/s}]",
			"f.yaml:4: expect[0].at: 0s out of range: expected a duration above 0s (at 0s nothing was sent yet, and the target is controller.bitrate)"},
		{"instant after the end", "expect: [{measure: bitrate.target, at: 25s, max: 2Mbit/s}]",
			"f.yaml:4: expect[0].at: 25s is after the end: the scenario lasts 20s"},
		{"window beside an instant", "expect: [{measure: bitrate.target, at: 10s, max: 2Mbit/s, from: 5s}]",
			"f.yaml:4: expect[0].from: from does not apply to bitrate.target: it is measured at one instant, at, not over a window"},
		{"instant beside a window", "expect: [{measure: bitrate.mean, at: 10s, max: 2Mbit/s}]",
			"f.yaml:4: expect[0].at: at does not apply to bitrate.mean: at applies to bitrate.target or bitrate.sent"},
		{"latency bound of 0s", "expect: [{measure: latency.time-above, latency: 0s, max: 5%}]",
			"f.yaml:4: expect[0].latency: 0s out of range: expected a duration above 0s"},
		{"latency bound without a unit", "expect: [{measure: recovery.under, latency: 150, max: 3s}]",
			"f.yaml:4: expect[0].latency: 150 is missing a unit: expected a duration like 25ms, 1.5s or 500us"},
		{"averaging period too long", "expect: [{measure: bitrate.capacity-correlation, every: 4s, min: 0.5, from: 10s}]",
			"f.yaml:4: expect[0].every: 4s is too long for the window [10s, 20s): expected at most a third of it (a correlation needs three periods)"},
		{"correlation out of range", "expect: [{measure: bitrate.capacity-correlation, every: 1s, min: 1.5}]",
			"f.yaml:4: expect[0].min: 1.5 out of range: expected a correlation from -1 to 1"},
		{"correlation with a unit", "expect: [{measure: bitrate.capacity-correlation, every: 1s, min: 50%}]",
			"f.yaml:4: expect[0].min: 50% has a unit, but bitrate.capacity-correlation is a correlation: expected a plain number from -1 to 1 like 0.8"},
		{"share below zero", "expect: [{measure: utilisation.sent, min: -5%}]",
			"f.yaml:4: expect[0].min: -5% out of range: expected a percentage of 0% or more"},
		{"unknown strategy", "path: websockets",
			`f.yaml:4: path.connect: unknown strategy "websockets": did you mean websocket? expected one of direct, auto, relay, websocket`},
		{"unknown router", "path: {connect: auto, viewer_nat: symetric}",
			`f.yaml:4: path.viewer_nat: unknown router "symetric": did you mean symmetric? expected one of none, full-cone, restricted-cone, port-restricted-cone, symmetric`},
		{"same router without one", "path: {same_router: true}",
			"f.yaml:4: path.same_router: same_router needs the router: set agent_nat (the LAN's router), e.g. port-restricted-cone"},
		{"same router and a viewer router", "path:\n  agent_nat: full-cone\n  viewer_nat: symmetric\n  same_router: true",
			"f.yaml:6: path.viewer_nat: the viewer is behind the agent's router when same_router is set: leave viewer_nat out"},
		{"force relay on direct", "path: {connect: direct, force_relay: true}",
			"f.yaml:4: path.force_relay: force_relay with connect direct: the switch steers the auto strategy; use connect: auto or relay"},
		{"path key typo", "path: {conect: auto}",
			`f.yaml:4: path.conect: unknown key "conect": did you mean connect? allowed keys: connect, agent_nat, viewer_nat, same_router, relay_delay, ignore_lan_candidates, force_relay`},
		{"unknown controller kind", "controller: {kind: ABR}",
			`f.yaml:4: controller.kind: unknown controller kind "ABR": did you mean abr? expected one of fixed, steps, abr, gcc`},
		{"abr key without kind", "controller:\n  bitrate: 2Mbit/s\n  window: 1s",
			"f.yaml:6: controller.window: window does not apply to kind fixed: window applies to kind abr"},
		{"abr key on gcc", "controller: {kind: gcc, hold: 2s}",
			"f.yaml:4: controller.hold: hold does not apply to kind gcc: hold applies to kind abr"},
		{"bounds on steps", "controller: {steps: [{at: 1s, bitrate: 1Mbit/s}], max: 2Mbit/s}",
			"f.yaml:4: controller.max: max does not apply to kind steps: max applies to kind abr or gcc"},
		{"steps on abr", "controller: {kind: abr, steps: [{at: 1s, bitrate: 1Mbit/s}]}",
			"f.yaml:4: controller.steps: steps does not apply to kind abr: steps applies to kind steps"},
		{"bitrate above max", "controller: {kind: abr, bitrate: 4Mbit/s, max: 3Mbit/s}",
			"f.yaml:4: controller.bitrate: 4Mbit/s is above max 3Mbit/s: expected an initial bitrate from min to max"},
		{"bitrate below min", "controller: {kind: gcc, bitrate: 300kbit/s, min: 500kbit/s, max: 3Mbit/s}",
			"f.yaml:4: controller.bitrate: 300kbit/s is below min 500kbit/s: expected an initial bitrate from min to max"},
		{"min zero", "controller: {kind: gcc, min: 0bit/s}",
			"f.yaml:4: controller.min: 0bit/s out of range: expected a rate above 0bit/s (leave min out for the controller's default)"},
		{"baseline shorter than window", "controller: {kind: abr, window: 2s, baseline: 1s}",
			"f.yaml:4: controller.baseline: 1s is shorter than window 2s: expected baseline >= window (the median over the window is compared with the minimum over the baseline)"},
		{"window zero", "controller: {kind: abr, window: 0s}",
			"f.yaml:4: controller.window: 0s out of range: expected a duration above 0s (leave window out for the controller's default)"},
		{"threshold negative", "controller: {kind: abr, threshold: -60ms}",
			"f.yaml:4: controller.threshold: -60ms out of range: expected a duration of 0s or more"},
		{"decrease 100%", "controller: {kind: abr, decrease: 100%}",
			"f.yaml:4: controller.decrease: 100% out of range: expected a decrease above 0% and below 100%"},
		{"decrease zero", "controller: {kind: abr, decrease: 0%}",
			"f.yaml:4: controller.decrease: 0% out of range: expected a decrease above 0% and below 100% (leave decrease out for the controller's default)"},
		{"decrease negative", "controller: {kind: abr, decrease: -20%}",
			"f.yaml:4: controller.decrease: -20% out of range: expected a decrease above 0% and below 100%"},
		{"increase zero", "controller: {kind: abr, increase: 0%}",
			"f.yaml:4: controller.increase: 0% out of range: expected an increase above 0% (leave increase out for the controller's default)"},
		{"increase without unit", "controller: {kind: abr, increase: 0.15}",
			"f.yaml:4: controller.increase: 0.15 is missing a unit: expected a percentage like 1% or 0.1%"},
		{"guard zero", "controller: {kind: abr, guard: 0%}",
			"f.yaml:4: controller.guard: 0% out of range: expected a percentage above 0% (for no guard, write switches: {old_abr_ignores_utilisation: true}; leave guard out for the controller's default)"},
		{"guard above 100%", "controller: {kind: abr, guard: 120%}",
			"f.yaml:4: controller.guard: 120% out of range: expected a percentage from 0% to 100%"},
		{"abr switch with gcc", "controller: {kind: gcc}\nswitches: {old_abr_total_latency: true, old_abr_ignores_utilisation: true}",
			"f.yaml:5: switches.old_abr_total_latency: old_abr_total_latency does not apply to controller kind gcc: old_abr_total_latency applies to controller kind abr\n" +
				"f.yaml:5: switches.old_abr_ignores_utilisation: old_abr_ignores_utilisation does not apply to controller kind gcc: old_abr_ignores_utilisation applies to controller kind abr"},
		{"abr switch with a bad kind", "controller: {kind: ab}\nswitches: {old_abr_single_peaks: true}",
			`f.yaml:4: controller.kind: unknown controller kind "ab": did you mean abr? expected one of fixed, steps, abr, gcc`},
		{"steps with fixed", "controller: {kind: fixed, steps: [{at: 1s, bitrate: 1Mbit/s}]}",
			"f.yaml:4: controller.steps: steps with kind fixed: a fixed controller never changes its bitrate; expected kind: steps"},
		{"yes is not a boolean", "switches: {old_capture_first: yes}",
			"f.yaml:4: switches.old_capture_first: yes is not a boolean: expected true or false"},
		{"duplicate key", "seed: 1\nseed: 2",
			"f.yaml:5: seed: duplicate key seed: already given at line 4"},
		{"normalised key", "network: {down: {block-udp: true}}",
			`f.yaml:4: network.down.block-udp: unknown key "block-udp": did you mean block_udp? allowed keys: at, delay, jitter, loss, gilbert, duplicate, corrupt, rate, overhead, trace, queue, spikes, outages, block_udp`},
		{"merge key", "base: &b {delay: 1ms}\n",
			`f.yaml:4: base: unknown key "base": allowed keys: name, description, findings, groups, duration, seed, network, screen, agent, viewer, clocks, controller, switches, path, traffic, expect`},
		{"yaml merge key", "network: {down: {<<: {delay: 1ms}}}",
			"f.yaml:4: network.down.<<: YAML merge keys (<<) are not supported: values shared by many scenarios go in defaults.yaml"},
		{"not a mapping", "agent: openh264",
			`f.yaml:4: agent: expected a mapping with keys encoder, encode_time, frame_sizes, hardware, absent, failing, refresh, convert, send_cap, refine, got "openh264"`},
		{"not a list", "findings: N3",
			`f.yaml:4: findings: expected a list of finding IDs like [N3, N20], got "N3"`},
		{"refine", "agent: {refine: no}",
			"f.yaml:4: agent.refine: no is not a refinement: expected off or a mapping like {passes: 15, every: 100ms}"},
		{"uniform without max", "agent: {encode_time: {min: 3ms}}",
			"f.yaml:4: agent.encode_time: min and max go together: expected {min, max} for a uniform distribution, or {mean, sd} for a normal one"},
		{"drift", "clocks: {agent: {drift: 5000ppm}}",
			"f.yaml:4: clocks.agent.drift: 5000ppm out of range: expected a drift from -1000ppm to 1000ppm (PC clocks drift by tens of ppm)"},
		{"flow named main", "traffic: [{name: main, kind: quic-bulk}]",
			"f.yaml:4: traffic[0].name: main names the scenario's own session: expected another name, like download"},
		{"flow after the end", "traffic: [{name: late, kind: cbr, rate: 1Mbit/s, start: 20s}]",
			"f.yaml:4: traffic[0].start: 20s is not before the end: the scenario lasts 20s"},
		{"flow stops after the end", "traffic: [{name: long, kind: cbr, rate: 1Mbit/s, stop: 25s}]",
			"f.yaml:4: traffic[0].stop: 25s is after the end: the scenario lasts 20s (leave stop out for the end)"},
		{"flow direction", "traffic: [{name: up, kind: tcp-bulk, direction: upstream}]",
			`f.yaml:4: traffic[0].direction: unknown direction "upstream": expected one of down, up`},
		{"a session has no direction", "traffic: [{name: s, kind: session, direction: up}]",
			"f.yaml:4: traffic[0].direction: direction does not apply to kind session: direction applies to kind quic-bulk, tcp-bulk, cbr or web"},
		{"congestion controller", "traffic: [{name: d, kind: tcp-bulk, congestion: vegas}]",
			`f.yaml:4: traffic[0].congestion: unknown congestion controller "vegas": expected one of cubic, reno, bbr`},
		{"cbr datagram too small", "traffic: [{name: v, kind: cbr, rate: 64kbit/s, size: 4B}]",
			"f.yaml:4: traffic[0].size: 4B out of range: expected a size from 8B to 65507B (a datagram, whose first 8 bytes carry its number)"},
		{"web sizes min above max", "traffic: [{name: w, kind: web, object: {min: 3MB}}]",
			"f.yaml:4: traffic[0].object.min: 3MB is greater than max 2MB: expected min <= max"},
		{"a session's controller key of another kind", "traffic: [{name: s, kind: session, controller: {kind: gcc, hold: 2s}}]",
			"f.yaml:4: traffic[0].controller.hold: hold does not apply to kind gcc: hold applies to kind abr"},
		{"a session's screen", "traffic: [{name: s, kind: session, screen: [{source: still, rate: 30}]}]",
			"f.yaml:4: traffic[0].screen[0].rate: rate does not apply to still: rate applies to animation, scrolling, video"},
		{"flow measurement without flow", "expect: [{measure: flow.throughput, min: 1Mbit/s}]",
			"f.yaml:4: expect[0].flow: missing required field: flow.throughput needs flow: expected the flow's name (a name in traffic, or main for the scenario's own session)"},
		{"flow on another measurement", "expect: [{measure: latency.median, flow: main, max: 100ms}]",
			"f.yaml:4: expect[0].flow: flow does not apply to latency.median: flow applies to flow.throughput, flow.share, flow.latency.median or flow.latency.p95"},
		{"latency of a bulk flow", "traffic: [{name: d, kind: tcp-bulk}]\nexpect: [{measure: flow.latency.median, flow: d, max: 100ms}]",
			"f.yaml:5: expect[0].flow: flow.latency.median has no latency: d is a tcp-bulk flow; expected main or a flow of kind session or reverse-media"},
		{"fairness of one session", "traffic: [{name: d, kind: tcp-bulk}]\nexpect: [{measure: fairness.jain, min: 0.9}]",
			"f.yaml:5: expect[0].measure: fairness.jain needs two media sessions on the downlink: expected a traffic flow of kind session beside the scenario's own"},
		{"recording without file", "screen: [{source: recording}]",
			"f.yaml:4: screen[0].file: missing required field: expected the recording's path, like ../testdata/recordings/typing.labrec"},
		{"file of another source", "screen: [{source: animation, file: testdata/recordings/tiny.labrec}]",
			"f.yaml:4: screen[0].file: file does not apply to animation: file applies to recording"},
		{"loop of another source", "screen: [{source: typing, loop: true}]",
			"f.yaml:4: screen[0].loop: loop does not apply to typing: loop applies to recording"},
		{"loop not a boolean", "screen: [{source: recording, file: testdata/recordings/tiny.labrec, loop: yes}]",
			"f.yaml:4: screen[0].loop: yes is not a boolean: expected true or false"},
		{"not a recording", "screen: [{source: recording, file: testdata/traces/cellular-a.down}]",
			"f.yaml:4: screen[0].file: bad recording file: not a screen recording (no LABSCREC header)"},
		{"recording from the shared folder", "screen: [{source: recording, file: 'shared:x.labrec'}]",
			`f.yaml:4: screen[0].file: "shared:x.labrec": recordings have no shared: form; expected the recording's path`},
		{"recording offset past its end", "screen:\n  - {source: recording, file: testdata/recordings/tiny.labrec, offset: 2s}",
			"f.yaml:5: screen[0].offset: 2s out of range: expected an offset below the recording's length, 1016ms"},
		{"recording offset without unit", "screen: [{source: recording, file: testdata/recordings/tiny.labrec, offset: 2}]",
			"f.yaml:4: screen[0].offset: 2 is missing a unit: expected a duration like 25ms, 1.5s or 500us"},
		{"recording offset negative", "screen: [{source: recording, file: testdata/recordings/tiny.labrec, offset: -1s}]",
			"f.yaml:4: screen[0].offset: -1s out of range: expected a duration of 0s or more"},
		{"duplicate name key", "name: u",
			"f.yaml:4: name: duplicate key name: already given at line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := head + tc.body // a body starting with ! is the whole file
			if full, ok := strings.CutPrefix(tc.body, "!"); ok {
				src = full
			}
			s, err := Parse("f.yaml", []byte(src+"\n"), nil)
			require.Nil(t, s)
			require.EqualError(t, err, tc.want)
		})
	}
}
