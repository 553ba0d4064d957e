package record

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Kind is a kind of desktop content: the Debian applications it starts
// and the script of input it plays on them. Everything a kind picks (the
// text it types, where it moves a window, when it scrolls) comes from the
// recording's seed, so that a command line remakes the same script; the
// pixels differ only by the applications' own timing.
type Kind struct {
	// Name is the kind's name for -kind.
	Name string
	// About says what it shows, in a line for lab record -list.
	About string
	// Packages are the Debian packages whose versions the recording's
	// App names, the application shown first.
	Packages []string
	// Programs are the executables it runs besides Xvfb and xdotool,
	// checked before anything starts.
	Programs []string
	// Shrunk says what the kind gives up to keep a lossless recording
	// small, "" for nothing: the corpus's manifest repeats it.
	Shrunk string

	// wm: the kind needs a window manager (openbox) for its windows'
	// frames, focus and moves.
	wm bool
	// prepare writes the kind's files (pages, pictures, a clip) into
	// e.dir before anything starts.
	prepare func(e *env) error
	// apps are the programs to start, in order.
	apps func(e *env) []app
	// script is the input to play, made once the windows are up.
	script func(e *env, d time.Duration) script
	// settle bounds the wait for a still screen before recording starts
	// (a page loading); kinds that never stand still wait for their
	// windows only.
	settle time.Duration
}

// app is a program a kind starts.
type app struct {
	name string
	args []string
	// window is what its window's WM_CLASS or WM_NAME contains, in lower
	// case, "" when the program has no window to wait for.
	window string
	// at, when set, is where its window is moved once shown: a program
	// without a position flag.
	at *[2]int
}

// script is what a kind does on the screen, as xdotool actions at their
// instants from the recording's start, and in words for the recording's
// metadata.
type script struct {
	words   string
	actions []action
}

// action is one run of xdotool.
type action struct {
	at   time.Duration
	args []string
}

// env is what a kind's functions work with.
type env struct {
	dir  string
	w, h int
	// root: the recording runs as root, where Chromium needs --no-sandbox.
	root bool
	rng  *rand.Rand
	// windows are the started programs' windows, by the index of their
	// app (0 for a program without one).
	windows []uint32
}

// Kinds lists every kind, in the order lab record -list shows them.
func Kinds() []Kind { return kinds }

// Lookup returns the kind called name.
func Lookup(name string) (Kind, error) {
	for _, k := range kinds {
		if k.Name == name {
			return k, nil
		}
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return Kind{}, fmt.Errorf("record: unknown kind %q (%s)", name, strings.Join(names, ", "))
}

// terminalFont is the font of every xterm: an antialiased TrueType font,
// as a desktop's terminal draws text, rather than xterm's bitmap default.
var terminalFont = []string{"-fa", "DejaVu Sans Mono", "-fs", "11"}

var kinds = []Kind{
	{
		Name: "terminal-typing", About: "shell commands typed into bash in a maximized xterm at a human pace, and their output",
		Packages: []string{"xterm", "openbox"}, Programs: []string{"xterm", "openbox", "bash"}, wm: true,
		apps: func(e *env) []app {
			return []app{{name: "xterm", window: "xterm", args: append(append([]string{"-maximized", "-T", "terminal"}, terminalFont...),
				"-e", "bash", "--norc", "--noprofile")}}
		},
		script: func(e *env, d time.Duration) script {
			var s scriptBuilder
			for s.t < d {
				cmd := shellCommands[e.rng.IntN(len(shellCommands))]
				if e.rng.IntN(3) == 0 {
					cmd = "echo " + sentence(e.rng, 4+e.rng.IntN(6))
				}
				s.typeText(e.rng, cmd)
				s.key("Return")
				s.pause(e.rng, 700*time.Millisecond, 2*time.Second) // reading the output
			}
			return s.done(d, "types shell commands (ls, cat, df, seq, echo with words, ...) into bash in a maximized xterm, "+
				"word by word at 50-140 ms a key, and Return, then pauses 0.7-2 s on the output")
		},
	},
	{
		Name: "editor-typing", About: "prose typed into nano in a maximized xterm, with line breaks and cursor moves",
		Packages: []string{"nano", "xterm", "openbox"}, Programs: []string{"xterm", "openbox", "nano"}, wm: true,
		apps: func(e *env) []app {
			return []app{{name: "xterm", window: "xterm", args: append(append([]string{"-maximized", "-T", "editor"}, terminalFont...),
				"-e", "nano", "--ignorercfiles", filepath.Join(e.dir, "notes.txt"))}}
		},
		script: func(e *env, d time.Duration) script {
			var s scriptBuilder
			for s.t < d {
				s.typeText(e.rng, sentence(e.rng, 6+e.rng.IntN(10))+".")
				switch e.rng.IntN(4) {
				case 0:
					s.key("Return", "Return")
				case 1:
					s.key("Up", "End")
				default:
					s.key("Return")
				}
				s.pause(e.rng, 300*time.Millisecond, 1500*time.Millisecond)
			}
			return s.done(d, "types sentences of common words into nano in a maximized xterm at 50-140 ms a key, "+
				"a line each, now and then a blank line or back up a line to its end")
		},
	},
	{
		Name: "document-scroll", About: "a long text document in Chromium (kiosk), read and scrolled by the wheel",
		Packages: []string{"chromium"}, Programs: []string{"chromium"}, settle: 15 * time.Second,
		Shrunk: "scrolls a wheel click or two at a time, with pauses: each click moves the whole page, which a lossless recording stores as new pixels",
		prepare: func(e *env) error {
			return os.WriteFile(filepath.Join(e.dir, "document.html"), documentHTML(e.rng), 0o644)
		},
		apps: func(e *env) []app { return []app{chromium(e, "document.html")} },
		script: func(e *env, d time.Duration) script {
			var s scriptBuilder
			s.pause(e.rng, time.Second, 2*time.Second)
			for s.t < d {
				s.scroll(e.rng, 5, 1+e.rng.IntN(2))
				if e.rng.IntN(6) == 0 {
					s.scroll(e.rng, 4, 1)
				}
				s.pause(e.rng, 1200*time.Millisecond, 3*time.Second)
			}
			return s.done(d, "reads a long generated text document in Chromium (kiosk, smooth scrolling off): "+
				"one or two wheel clicks down every 1.2-3 s, now and then one back up")
		},
	},
	{
		Name: "web-scroll", About: "a web page with columns, pictures and a sidebar in Chromium (kiosk), scrolled by the wheel",
		Packages: []string{"chromium"}, Programs: []string{"chromium"}, settle: 15 * time.Second,
		Shrunk:  "scrolls a wheel click or two at a time, with pauses, as document-scroll",
		prepare: func(e *env) error { return writeWebPage(e) },
		apps:    func(e *env) []app { return []app{chromium(e, "web.html")} },
		script: func(e *env, d time.Duration) script {
			var s scriptBuilder
			s.pause(e.rng, time.Second, 2*time.Second)
			for s.t < d {
				s.scroll(e.rng, 5, 1+e.rng.IntN(2))
				if e.rng.IntN(5) == 0 {
					s.scroll(e.rng, 4, 1+e.rng.IntN(2))
				}
				s.pause(e.rng, time.Second, 2500*time.Millisecond)
			}
			return s.done(d, "browses a generated web page (header, three columns of cards with photo-like pictures, a sidebar) "+
				"in Chromium (kiosk, smooth scrolling off): one or two wheel clicks down every 1-2.5 s, now and then back up")
		},
	},
	{
		Name: "form-fill", About: "a spreadsheet-like table of inputs in Chromium (kiosk), filled by typing and Tab",
		Packages: []string{"chromium"}, Programs: []string{"chromium"}, settle: 15 * time.Second,
		prepare: func(e *env) error { return os.WriteFile(filepath.Join(e.dir, "form.html"), formHTML(e.rng), 0o644) },
		apps:    func(e *env) []app { return []app{chromium(e, "form.html")} },
		script: func(e *env, d time.Duration) script {
			var s scriptBuilder
			s.pause(e.rng, 500*time.Millisecond, time.Second)
			for cell := 0; s.t < d; cell++ {
				s.typeText(e.rng, cellValue(e.rng, cell))
				s.key("Tab")
				s.pause(e.rng, 150*time.Millisecond, 900*time.Millisecond)
			}
			return s.done(d, "fills a generated table of inputs (name, city, date, quantity, price, ...) in Chromium (kiosk) "+
				"cell by cell: a value typed at 50-140 ms a key, then Tab to the next cell")
		},
	},
	{
		Name: "window-moves", About: "three xterms dragged about an openbox desktop, with xclock ticking",
		Packages: []string{"openbox", "xterm", "x11-apps"}, Programs: []string{"openbox", "xterm", "xclock"}, wm: true,
		apps: func(e *env) []app {
			apps := []app{{name: "xclock", window: "xclock", args: []string{"-update", "1", "-geometry", "160x160-10+10"}}}
			for i, cmd := range [][]string{{"ls", "-l", "/usr/lib"}, {"cat", "/etc/services"}, {"ls", "-lR", "/etc/X11"}} {
				geo := fmt.Sprintf("80x24+%d+%d", 40+i*e.w/5, 40+i*e.h/8)
				apps = append(apps, app{name: "xterm", window: "xterm", args: append(append([]string{"-geometry", geo, "-T", fmt.Sprintf("term-%d", i+1), "-hold"},
					terminalFont...), append([]string{"-e"}, cmd...)...)})
			}
			return apps
		},
		script: func(e *env, d time.Duration) script {
			var s scriptBuilder
			pos := map[int][2]int{}
			s.pause(e.rng, 500*time.Millisecond, time.Second)
			for s.t < d {
				i := 1 + e.rng.IntN(3)
				id := strconv.Itoa(int(e.windows[i]))
				from, ok := pos[i]
				if !ok {
					from = [2]int{40 + (i-1)*e.w/5, 40 + (i-1)*e.h/8}
				}
				to := [2]int{e.rng.IntN(max(1, e.w/2)), e.rng.IntN(max(1, e.h/2))}
				s.do("windowactivate", id)
				s.t += 100 * time.Millisecond
				// A drag: the window follows the pointer at 30 moves a
				// second for 0.6-1.2 s.
				steps := 18 + e.rng.IntN(19)
				for k := 1; k <= steps; k++ {
					x := from[0] + (to[0]-from[0])*k/steps
					y := from[1] + (to[1]-from[1])*k/steps
					s.do("windowmove", id, strconv.Itoa(x), strconv.Itoa(y))
					s.t += time.Second / 30
				}
				pos[i] = to
				s.pause(e.rng, 700*time.Millisecond, 2*time.Second)
			}
			return s.done(d, "raises one of three xterms (ls, cat, ls -lR output) and drags it to a new place in 0.6-1.2 s "+
				"(a window move 30 times a second), every 0.7-2 s, on openbox with xclock -update 1 in a corner")
		},
	},
	{
		Name: "video", About: "mpv playing a clip of soft moving colours made by ffmpeg, in a window on a dark desktop",
		Packages: []string{"mpv", "ffmpeg", "openbox"}, Programs: []string{"mpv", "ffmpeg", "openbox"}, wm: true,
		Shrunk: "the clip is a quarter of the screen's width and height (320x180 at 720p) at 24 frames a second, and it is ffmpeg's gradients source " +
			"(soft colours moving), not a camera's or a fractal's detail: its mandelbrot zoom cost 170 kB a frame losslessly at 426x240, gradients 75 kB",
		prepare: func(e *env) error {
			w, h := clipSize(e)
			return runTool(e, "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", fmt.Sprintf("gradients=size=%dx%d:rate=24:speed=0.02:seed=%d", w, h, e.rng.Uint32()),
				"-t", "20", "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p", filepath.Join(e.dir, "clip.mp4"))
		},
		apps: func(e *env) []app {
			w, h := clipSize(e)
			return []app{{name: "mpv", window: "mpv", args: []string{"--no-config", "--vo=x11", "--no-audio", "--loop-file=inf", "--no-osc",
				"--osd-level=0", "--title=clip", fmt.Sprintf("--geometry=%dx%d+%d+%d", w, h, (e.w-w)/2, (e.h-h)/2), filepath.Join(e.dir, "clip.mp4")}}}
		},
		script: func(e *env, d time.Duration) script {
			return script{words: "plays a 24 frames a second clip of ffmpeg's gradients source (soft colours moving; x264 at crf 18) with mpv (--vo=x11) " +
				"in a window in the middle of the desktop, looping; no input"}
		},
	},
	{
		Name: "3d", About: "glmark2's build scene (a rotating model) in a window, rendered by Mesa's software GL",
		Packages: []string{"glmark2-x11", "libgl1-mesa-dri", "openbox"}, Programs: []string{"glmark2", "openbox"}, wm: true,
		Shrunk: "the 3D window is a third of the screen's width and height (426x240 at 720p) in a 720p desktop, for software GL's frame rate and the recording's size",
		apps: func(e *env) []app {
			w, h := videoSize(e)
			return []app{{name: "glmark2", window: "glmark2", at: &[2]int{(e.w - w) / 2, (e.h - h) / 2},
				args: []string{"--size", fmt.Sprintf("%dx%d", w, h), "-b", "build:use-vbo=true:duration=3600"}}}
		},
		script: func(e *env, d time.Duration) script {
			return script{words: "runs glmark2's build scene (a horse model turning, lit) in a window in the middle of the desktop, " +
				"drawn by Mesa's llvmpipe as fast as it can; no input"}
		},
	},
	{
		Name: "photo", About: "generated photo-like pictures shown full screen by mpv, the next one at a key press",
		Packages: []string{"mpv"}, Programs: []string{"mpv"},
		Shrunk:  "a new picture every 2.5-4 s: each one is new pixels, a keyframe's worth",
		prepare: func(e *env) error { return writePhotos(e, 8) },
		apps: func(e *env) []app {
			args := []string{"--no-config", "--vo=x11", "--fs", "--image-display-duration=inf", "--no-osc", "--osd-level=0", "--title=photos"}
			for i := range 8 {
				args = append(args, filepath.Join(e.dir, fmt.Sprintf("photo-%d.png", i+1)))
			}
			return []app{{name: "mpv", window: "mpv", args: args}}
		},
		script: func(e *env, d time.Duration) script {
			var s scriptBuilder
			s.pause(e.rng, 2500*time.Millisecond, 4*time.Second)
			for s.t < d {
				s.key("Return") // mpv's playlist-next
				s.pause(e.rng, 2500*time.Millisecond, 4*time.Second)
			}
			return s.done(d, "shows generated photo-like landscapes (sky, sun, textured hills, haze, faint grain) full screen with mpv, "+
				"Return (the next picture) every 2.5-4 s")
		},
	},
	{
		Name: "idle", About: "an openbox desktop with xclock ticking once a second, and nothing else",
		Packages: []string{"x11-apps", "openbox"}, Programs: []string{"xclock", "openbox"}, wm: true,
		apps: func(e *env) []app {
			return []app{{name: "xclock", window: "xclock", args: []string{"-update", "1", "-geometry", "160x160-10+10"}}}
		},
		script: func(e *env, d time.Duration) script {
			return script{words: "leaves an openbox desktop alone with xclock -update 1 (a second hand) in its top right corner; no input"}
		},
	},
}

// videoSize is the 3D window's size: a third of the screen's sides.
func videoSize(e *env) (int, int) { return e.w / 3 &^ 1, e.h / 3 &^ 1 }

// clipSize is the video's: a quarter of the screen's sides, even (x264's
// 4:2:0 wants them so).
func clipSize(e *env) (int, int) { return e.w / 4 &^ 1, e.h / 4 &^ 1 }

// chromium is Chromium showing page (in e.dir) full screen: kiosk mode,
// so that the recording is the page and not the browser's chrome. Smooth
// scrolling is off, so that a wheel click is one jump of the page, as
// with most remote desktops' wheel events, not an animation of a dozen
// frames.
func chromium(e *env, page string) app {
	args := []string{"--kiosk", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-smooth-scrolling",
		"--user-data-dir=" + filepath.Join(e.dir, "chromium"), "--disable-dev-shm-usage", "--password-store=basic",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-features=Translate,MediaRouter",
		"--noerrdialogs", "--force-device-scale-factor=1", fmt.Sprintf("--window-size=%d,%d", e.w, e.h), "--window-position=0,0"}
	if e.root {
		args = append(args, "--no-sandbox") // its sandbox refuses to run as root
	}
	return app{name: "chromium", window: "chromium", args: append(args, "file://"+filepath.Join(e.dir, page))}
}

// scriptBuilder lays out actions one after another.
type scriptBuilder struct {
	t       time.Duration
	actions []action
}

// do adds an action at the current instant.
func (s *scriptBuilder) do(args ...string) {
	s.actions = append(s.actions, action{at: s.t, args: args})
}

// typeText types text word by word, as a person does: each word at its
// own pace (50-140 ms a key, xdotool's delay) and a short pause between
// words; the instants allow for the typing's own time.
func (s *scriptBuilder) typeText(rng *rand.Rand, text string) {
	words := strings.SplitAfter(text, " ")
	for _, w := range words {
		if w == "" {
			continue
		}
		delay := 50 + rng.IntN(91)
		s.do("type", "--delay", strconv.Itoa(delay), "--", w)
		s.t += time.Duration(len(w)*delay)*time.Millisecond + time.Duration(rng.IntN(120))*time.Millisecond
	}
}

// key presses keys one after another, 120 ms apart.
func (s *scriptBuilder) key(keys ...string) {
	for _, k := range keys {
		s.do("key", k)
		s.t += 120 * time.Millisecond
	}
}

// scroll clicks the wheel (button 4 up, 5 down) n times, 80-200 ms apart.
func (s *scriptBuilder) scroll(rng *rand.Rand, button, n int) {
	for range n {
		s.do("click", strconv.Itoa(button))
		s.t += time.Duration(80+rng.IntN(121)) * time.Millisecond
	}
}

// pause waits between lo and hi.
func (s *scriptBuilder) pause(rng *rand.Rand, lo, hi time.Duration) {
	s.t += lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// done is the script, its actions cut at the recording's end d.
func (s *scriptBuilder) done(d time.Duration, words string) script {
	var out []action
	for _, a := range s.actions {
		if a.at < d {
			out = append(out, a)
		}
	}
	return script{words: words, actions: out}
}

// shellCommands are what terminal-typing types: harmless, and each shows
// some output.
var shellCommands = []string{
	"ls -l /usr/share/doc | head -20",
	"cat /etc/os-release",
	"uname -a",
	"df -h /",
	"seq 1 40 | paste -sd ' '",
	"ls /usr/bin | head -60 | column",
	"date -u +%F",
	"wc -l /etc/services",
	"head -25 /etc/services",
	"printf '%s\\n' alpha beta gamma delta",
	"ls -la",
	"echo $SHELL $TERM",
}

// vocabulary is what the typed and generated texts are made of.
var vocabulary = strings.Fields(`the a of and to in is that for it as with was on be by this are from at or
an have not which but all they were one their has more when there been can if will would about so some
what other into time only new could these may then do first any like now such our out most over also made
after should well where because those through very years way work even back much before must right still
system screen network latency frame packet window desktop remote session user server client video encoder
bitrate quality delay loss jitter queue buffer codec display update change region pixel picture stream
report measure model test result scenario link path route signal office home train mobile cellular wireless
morning evening weekly meeting project design review release budget quarter customer support market team
green blue river mountain garden window kitchen table letter paper coffee summer winter city station`)

// sentence is n seeded words, the first capitalised.
func sentence(rng *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	w[0] = strings.ToUpper(w[0][:1]) + w[0][1:]
	return strings.Join(w, " ")
}
