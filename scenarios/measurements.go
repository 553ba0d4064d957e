package scenarios

import "slices"

// The catalogue of measurements: what an expectation may bound, in which
// unit, with which keys of its own, and what it means. It is the one list
// of them: the loader, the schema (scenario.schema.json) and FORMAT.md's
// measurement table are checked or generated from it, and lab/measure binds
// each name to its computation, held to the same names by a test there.

// Unit is what a measurement's value is.
type Unit string

// Measurement units.
const (
	UnitDuration Unit = "duration" // seconds
	UnitCount    Unit = "count"
	UnitRate     Unit = "rate"     // bits per second
	UnitFraction Unit = "fraction" // 0..1, written as a percentage ("95%")
	UnitRatio    Unit = "ratio"    // a plain number
	// UnitShare is a fraction that may exceed 1 (sent over capacity),
	// written as a percentage ("120%").
	UnitShare Unit = "share"
	// UnitCorrelation is a correlation coefficient, -1..1, written as a
	// plain number ("0.8", "-0.2").
	UnitCorrelation Unit = "correlation"
)

// Measurement describes one named measurement a scenario may bound.
type Measurement struct {
	Name string
	Unit Unit
	// Keys names the expectation keys the measurement reads besides
	// measure, min, max, from and to (latency, at, every, flow); every
	// one of them is required. A measurement read at an instant (at) has
	// no window: from and to do not apply to it.
	//
	// A figure a measurement needs (a latency bound, an instant, an
	// averaging period) is a key beside measure, {measure: recovery.under,
	// latency: 150ms, max: 3s}, rather than part of the name
	// (recovery.under.150ms, as frames.skipped.REASON carries a reason): a
	// key keeps the figure's unit, parser and messages (1.5s holds a dot a
	// name could not), the names stay a fixed list for the schema's enum,
	// and the check goes both ways, as for a controller kind's keys: a key
	// the measurement does not read is an error, and so is a measurement
	// without a key it needs.
	Keys []string
	// Doc says what it measures, in FORMAT.md's Markdown: the row of
	// FORMAT.md's measurement table is generated from it, after "with
	// `KEY`: " for each key it reads.
	Doc string
}

// Measurements is the catalogue of measurements expectations may name. The
// lab's runner computes every one of them; the loader refuses any other.
var Measurements = []Measurement{
	{Name: "latency.median", Unit: UnitDuration,
		Doc: "median true capture-to-display latency of displayed frames"},
	{Name: "latency.p95", Unit: UnitDuration,
		Doc: "95th percentile of the same"},
	{Name: "latency.p99", Unit: UnitDuration,
		Doc: "99th percentile of the same"},
	{Name: "latency.min", Unit: UnitDuration,
		Doc: "minimum of the same"},
	{Name: "latency.max", Unit: UnitDuration,
		Doc: "maximum of the same"},
	{Name: "latency.time-above", Unit: UnitFraction, Keys: []string{"latency"},
		Doc: "the share of the window's time with a picture on the viewer's screen during which that picture's latency was above `latency` (each displayed frame counts from its display to the next one's)"},
	{Name: "network.median", Unit: UnitDuration,
		Doc: "median network part: end of encoding to arrival (N12)"},
	{Name: "estimate.error.max", Unit: UnitDuration,
		Doc: "largest gap between the viewer's own latency estimate and the truth (N1)"},
	{Name: "frames.displayed", Unit: UnitCount,
		Doc: "frames displayed"},
	{Name: "frames.skipped", Unit: UnitCount,
		Doc: "captures skipped by the agent, any reason"},
	{Name: "frames.skipped.send-cap", Unit: UnitCount,
		Doc: "captures skipped because 256 KB were unacknowledged (N8)"},
	{Name: "frames.skipped.encoder-unavailable", Unit: UnitCount,
		Doc: "captures skipped while the encoder restarted (N16)"},
	{Name: "frames.skipped.rate-control", Unit: UnitCount,
		Doc: "captures the encoder's rate control skipped to hold its target bitrate: below about 144 kbit/s a frame of useful size at every refresh is more than the target carries, and the frame rate drops ([frame skipping](../docs/codecs.md#frame-skipping-at-low-bitrates))"},
	{Name: "frames.dropped", Unit: UnitCount,
		Doc: "frames dropped by the viewer, any reason"},
	{Name: "frames.dropped.overtaken", Unit: UnitCount,
		Doc: "frames dropped because a newer one was decoded first (N8)"},
	{Name: "fps", Unit: UnitRatio,
		Doc: "displayed frames per second"},
	{Name: "freezes", Unit: UnitCount,
		Doc: "stretches longer than max(150 ms, 3 frame intervals) in which the screen had changed and the display did not (below)"},
	{Name: "freeze.longest", Unit: UnitDuration,
		Doc: "the longest stretch in which the screen had changed and the display did not, freeze or not"},
	{Name: "bitrate.mean", Unit: UnitRate,
		Doc: "mean bitrate of the video sent"},
	{Name: "bitrate.min", Unit: UnitRate,
		Doc: "lowest target bitrate of the controller"},
	{Name: "bitrate.target", Unit: UnitRate, Keys: []string{"at"},
		Doc: "the controller's target bitrate at that instant"},
	{Name: "bitrate.sent", Unit: UnitRate, Keys: []string{"at"},
		Doc: "the video handed to QUIC in the 250 ms (the result's sample period) before that instant, per second"},
	{Name: "bitrate.capacity-correlation", Unit: UnitCorrelation, Keys: []string{"every"},
		Doc: "the Pearson correlation of the target bitrate with the downlink's capacity, each averaged over consecutive periods of `every` from the window's start (a last, shorter period left out; periods with the downlink uncapped for part of them left out; three periods at least)"},
	{Name: "quality.final", Unit: UnitFraction,
		Doc: "quality figure of the last frame displayed (N15)"},
	{Name: "quality.psnr.median", Unit: UnitRatio,
		Doc: "median quality shown, in dB: the luma PSNR of the viewer's decoded picture against the captured one, over the frames displayed (a real encoder, `openh264-real`)"},
	{Name: "quality.psnr.min", Unit: UnitRatio,
		Doc: "lowest of the same"},
	{Name: "quality.ssim.median", Unit: UnitRatio,
		Doc: "median structural similarity (SSIM, luma, 0 to 1, as ffmpeg's `ssim` filter computes it) of the viewer's decoded picture to the captured one, over the frames displayed (a real encoder, `openh264-real`)"},
	{Name: "quality.ssim.min", Unit: UnitRatio,
		Doc: "lowest of the same"},
	{Name: "frames.damaged", Unit: UnitCount,
		Doc: "frames displayed with a damaged picture: decoded onto a broken reference chain (a frame they depend on was dropped or lost), until a keyframe or a rolling refresh repaired it"},
	{Name: "damaged.time", Unit: UnitDuration,
		Doc: "time the display showed a damaged picture: from each damaged frame's display to the next frame's"},
	{Name: "damaged.longest", Unit: UnitDuration,
		Doc: "the longest stretch of the same, damaged pictures one after another"},
	{Name: "keyframes.asked", Unit: UnitCount,
		Doc: "keyframe requests the viewer sent (a broken chain, a lost frame)"},
	{Name: "keyframes.sent", Unit: UnitCount,
		Doc: "keyframes the agent sent, the first one included"},
	{Name: "refreshes.asked", Unit: UnitCount,
		Doc: "rolling intra refresh requests the viewer sent (`viewer.policy: refresh`)"},
	{Name: "refinements", Unit: UnitCount,
		Doc: "refinement passes sent (N15)"},
	{Name: "utilisation", Unit: UnitFraction,
		Doc: "video bytes delivered / link capacity over the window (rate-capped links)"},
	{Name: "utilisation.sent", Unit: UnitShare,
		Doc: "video bytes handed to QUIC / the downlink's capacity over the window (rate-capped links): above 100% when the video outran the link, the rest queued or lost"},
	{Name: "recovery", Unit: UnitDuration,
		Doc: "longest time after a network phase change until the latency median of a second is back within 20% of its level before"},
	{Name: "recovery.under", Unit: UnitDuration, Keys: []string{"latency"},
		Doc: "for each network phase change in the window (either direction), the time until the median latency of the frames displayed in the last second is under `latency` and stays under it until the next change (or the window's end); the longest of them. A second with no frame displayed is not under. A change after which it never gets back fails the check, saying which change and what the median was at the end"},
	{Name: "time-to-low-latency", Unit: UnitDuration,
		Doc: "from the window's start, until the first second whose latency median is under 100 ms (N2's threshold); put `from` at a network change"},
	{Name: "time-to-full-use", Unit: UnitDuration,
		Doc: "from the window's start, until the first second in which the video uses at least 90% of the downlink's capacity"},
	{Name: "connect.time", Unit: UnitDuration,
		Doc: "from the viewer's first connection attempt to its QUIC connection (sessions with a path; not windowed)"},
	{Name: "first-frame", Unit: UnitDuration,
		Doc: "connect.time plus the first displayed frame's display instant after time zero: what a user waits for the picture (sessions with a path; not windowed)"},
	{Name: "path.direct-lan", Unit: UnitCount,
		Doc: "1 when the session went straight between the PCs' LAN addresses, else 0 (sessions with a path)"},
	{Name: "path.direct-public", Unit: UnitCount,
		Doc: "1 when it went between public addresses through punched holes, else 0"},
	{Name: "path.relay", Unit: UnitCount,
		Doc: "1 when the viewer reached the relay over UDP, else 0"},
	{Name: "path.websocket", Unit: UnitCount,
		Doc: "1 when the viewer reached the relay in the WebSocket tunnel, else 0"},
	{Name: "flow.throughput", Unit: UnitRate, Keys: []string{"flow"},
		Doc: "the payload the flow's receiving application got in the window, per second: a bulk flow's goodput, what a cbr or web flow delivered, a session's video delivered (frames counted by arrival)"},
	{Name: "flow.share", Unit: UnitFraction, Keys: []string{"flow"},
		Doc: "the same over the capacity of the link the flow's data crosses (the downlink, or the uplink for `direction: up` and `reverse-media`) over the window (rate-capped links); payload only, so a flow alone on the link reads a few percent under 100%"},
	{Name: "flow.latency.median", Unit: UnitDuration, Keys: []string{"flow"},
		Doc: "the median true capture-to-display latency of the frames the session (`main`, a `session` or a `reverse-media` flow) displayed in the window"},
	{Name: "flow.latency.p95", Unit: UnitDuration, Keys: []string{"flow"},
		Doc: "the 95th percentile of the same"},
	{Name: "fairness.jain", Unit: UnitRatio,
		Doc: "Jain's fairness index, (sum x)^2 / (n sum x^2), over the throughputs of the media sessions on the downlink (`main` and every `session` flow running in the window): 1 when they are equal, 1/n when one takes everything; needs a `session` flow"},
}

// MeasurementKeys lists the expectation keys (latency, at, every, flow) the
// measurement name reads, all required; none for most.
func MeasurementKeys(name string) []string {
	m, _ := LookupMeasurement(name)
	return slices.Clone(m.Keys)
}

// LookupMeasurement finds a measurement by name.
func LookupMeasurement(name string) (Measurement, bool) {
	for _, m := range Measurements {
		if m.Name == name {
			return m, true
		}
	}
	return Measurement{}, false
}
