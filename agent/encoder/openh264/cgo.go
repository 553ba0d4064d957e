//go:build cgo

package openh264

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The soname of Debian's libopenh264 2.3.1, then the development link.
static void* lab_open_lib(void) {
	void* h = dlopen("libopenh264.so.7", RTLD_NOW | RTLD_LOCAL);
	if (!h) h = dlopen("libopenh264.so", RTLD_NOW | RTLD_LOCAL);
	return h;
}

#if __has_include(<wels/codec_api.h>)
#include <wels/codec_api.h>
#include <wels/codec_ver.h>
#define LAB_HAVE_HEADER 1

static int (*lab_create_enc)(ISVCEncoder**);
static void (*lab_destroy_enc)(ISVCEncoder*);
static long (*lab_create_dec)(ISVCDecoder**);
static void (*lab_destroy_dec)(ISVCDecoder*);
static OpenH264Version (*lab_version)(void);
static int lab_loaded; // 0 not tried, 1 loaded, -1 failed
static char lab_why[256];
static int lab_got[3];

// lab_load opens the library once; NULL when it is there, else why not.
static const char* lab_load(void) {
	if (lab_loaded == 1) return NULL;
	if (lab_loaded == -1) return lab_why;
	lab_loaded = -1;
	void* h = lab_open_lib();
	if (!h) {
		snprintf(lab_why, sizeof lab_why, "libopenh264.so.7 not found (install Debian's libopenh264-dev): %s", dlerror());
		return lab_why;
	}
	lab_create_enc = (int (*)(ISVCEncoder**))dlsym(h, "WelsCreateSVCEncoder");
	lab_destroy_enc = (void (*)(ISVCEncoder*))dlsym(h, "WelsDestroySVCEncoder");
	lab_create_dec = (long (*)(ISVCDecoder**))dlsym(h, "WelsCreateDecoder");
	lab_destroy_dec = (void (*)(ISVCDecoder*))dlsym(h, "WelsDestroyDecoder");
	lab_version = (OpenH264Version (*)(void))dlsym(h, "WelsGetCodecVersion");
	if (!lab_create_enc || !lab_destroy_enc || !lab_create_dec || !lab_destroy_dec || !lab_version) {
		snprintf(lab_why, sizeof lab_why, "libopenh264 lacks the codec's entry points");
		return lab_why;
	}
	OpenH264Version v = lab_version();
	lab_got[0] = v.uMajor; lab_got[1] = v.uMinor; lab_got[2] = v.uRevision;
	// The structures are laid out by the header the binding was built
	// with: a library of another minor version may lay them out otherwise.
	if (v.uMajor != OPENH264_MAJOR || v.uMinor != OPENH264_MINOR) {
		snprintf(lab_why, sizeof lab_why, "libopenh264 is %u.%u.%u but the binding was built with the header of %d.%d.%d",
			v.uMajor, v.uMinor, v.uRevision, OPENH264_MAJOR, OPENH264_MINOR, OPENH264_REVISION);
		return lab_why;
	}
	lab_loaded = 1;
	return NULL;
}

typedef struct {
	ISVCEncoder* e;
	SFrameBSInfo info;
} lab_enc;

static int lab_enc_new(lab_enc** out, int w, int h, int bitrate, float fps, int rc, int skip, int camera, int ltr) {
	lab_enc* x = (lab_enc*)calloc(1, sizeof(lab_enc));
	if (!x) return -3;
	int rv = lab_create_enc(&x->e);
	if (rv != 0 || !x->e) { free(x); return rv ? rv : -1; }
	int quiet = WELS_LOG_QUIET;
	(*x->e)->SetOption(x->e, ENCODER_OPTION_TRACE_LEVEL, &quiet);
	SEncParamExt p;
	(*x->e)->GetDefaultParams(x->e, &p);
	p.iUsageType = camera ? CAMERA_VIDEO_REAL_TIME : SCREEN_CONTENT_REAL_TIME;
	p.iPicWidth = w;
	p.iPicHeight = h;
	p.iTargetBitrate = bitrate;
	p.iMaxBitrate = UNSPECIFIED_BIT_RATE;
	p.iRCMode = (RC_MODES)rc;
	p.fMaxFrameRate = fps;
	p.bEnableFrameSkip = skip ? true : false;
	p.iMultipleThreadIdc = 1; // one thread: the same bytes at every run
	p.bUseLoadBalancing = false;
	p.uiIntraPeriod = 0;      // keyframes only when asked for
	p.iSpatialLayerNum = 1;
	p.iTemporalLayerNum = 1;
	p.sSpatialLayers[0].iVideoWidth = w;
	p.sSpatialLayers[0].iVideoHeight = h;
	p.sSpatialLayers[0].fFrameRate = fps;
	p.sSpatialLayers[0].iSpatialBitrate = bitrate;
	p.sSpatialLayers[0].iMaxSpatialBitrate = UNSPECIFIED_BIT_RATE;
	p.sSpatialLayers[0].sSliceArgument.uiSliceMode = SM_SINGLE_SLICE;
	p.sSpatialLayers[0].sSliceArgument.uiSliceNum = 1;
	if (ltr > 0) {
		// Long-term references with the decoder's feedback: a frame is
		// marked every ltr frames, and the encoder refers to it only once
		// the decoder has said it holds it (a lossy link, not a lossless
		// one).
		p.bEnableLongTermReference = true;
		p.iLTRRefNum = 2; // the encoder's only count (codec_app_def.h)
		p.iLtrMarkPeriod = ltr;
		p.bIsLosslessLink = false;
	}
	rv = (*x->e)->InitializeExt(x->e, &p);
	if (rv != 0) { lab_destroy_enc(x->e); free(x); return rv; }
	int format = videoFormatI420;
	(*x->e)->SetOption(x->e, ENCODER_OPTION_DATAFORMAT, &format);
	*out = x;
	return 0;
}

// lab_enc_encode encodes one picture; *type and *size say what came out
// (the bytes wait in x->info for lab_enc_copy).
static int lab_enc_encode(lab_enc* x, unsigned char* y, unsigned char* u, unsigned char* v,
                          int w, int h, long long ts, int* type, int* size) {
	SSourcePicture pic;
	memset(&pic, 0, sizeof pic);
	pic.iColorFormat = videoFormatI420;
	pic.iPicWidth = w;
	pic.iPicHeight = h;
	pic.iStride[0] = w;
	pic.iStride[1] = pic.iStride[2] = w / 2;
	pic.pData[0] = y;
	pic.pData[1] = u;
	pic.pData[2] = v;
	pic.uiTimeStamp = ts;
	memset(&x->info, 0, sizeof x->info);
	int rv = (*x->e)->EncodeFrame(x->e, &pic, &x->info);
	*type = x->info.eFrameType;
	int n = 0;
	for (int l = 0; l < x->info.iLayerNum; l++)
		for (int i = 0; i < x->info.sLayerInfo[l].iNalCount; i++)
			n += x->info.sLayerInfo[l].pNalLengthInByte[i];
	*size = n;
	return rv;
}

// lab_enc_copy copies the last frame's NAL units, in order, to dst.
static void lab_enc_copy(lab_enc* x, unsigned char* dst) {
	for (int l = 0; l < x->info.iLayerNum; l++) {
		int n = 0;
		for (int i = 0; i < x->info.sLayerInfo[l].iNalCount; i++)
			n += x->info.sLayerInfo[l].pNalLengthInByte[i];
		memcpy(dst, x->info.sLayerInfo[l].pBsBuf, n);
		dst += n;
	}
}

static int lab_enc_force_idr(lab_enc* x) { return (*x->e)->ForceIntraFrame(x->e, true); }

static int lab_enc_set_bitrate(lab_enc* x, int bps) {
	SBitrateInfo b;
	b.iLayer = SPATIAL_LAYER_ALL;
	b.iBitrate = bps;
	return (*x->e)->SetOption(x->e, ENCODER_OPTION_BITRATE, &b);
}

static int lab_enc_set_framerate(lab_enc* x, float fps) {
	return (*x->e)->SetOption(x->e, ENCODER_OPTION_FRAME_RATE, &fps);
}

static int lab_enc_ltr_marked(lab_enc* x, unsigned int idr, int frame, int ok) {
	SLTRMarkingFeedback f;
	memset(&f, 0, sizeof f);
	f.uiFeedbackType = ok ? LTR_MARKING_SUCCESS : LTR_MARKING_FAILED;
	f.uiIDRPicId = idr;
	f.iLTRFrameNum = frame;
	return (*x->e)->SetOption(x->e, ENCODER_LTR_MARKING_FEEDBACK, &f);
}

static int lab_enc_ltr_recover(lab_enc* x, unsigned int idr, int lastCorrect, int current) {
	SLTRRecoverRequest r;
	memset(&r, 0, sizeof r);
	r.uiFeedbackType = LTR_RECOVERY_REQUEST;
	r.uiIDRPicId = idr;
	r.iLastCorrectFrameNum = lastCorrect;
	r.iCurrentFrameNum = current;
	return (*x->e)->SetOption(x->e, ENCODER_LTR_RECOVERY_REQUEST, &r);
}

static void lab_enc_free(lab_enc* x) {
	(*x->e)->Uninitialize(x->e);
	lab_destroy_enc(x->e);
	free(x);
}

typedef struct {
	ISVCDecoder* d;
	SBufferInfo out;
	unsigned char* planes[3];
} lab_dec;

static int lab_dec_new(lab_dec** out) {
	lab_dec* x = (lab_dec*)calloc(1, sizeof(lab_dec));
	if (!x) return -3;
	long rv = lab_create_dec(&x->d);
	if (rv != 0 || !x->d) { free(x); return rv ? (int)rv : -1; }
	int quiet = WELS_LOG_QUIET;
	(*x->d)->SetOption(x->d, DECODER_OPTION_TRACE_LEVEL, &quiet);
	SDecodingParam p;
	memset(&p, 0, sizeof p);
	p.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_AVC;
	p.eEcActiveIdc = ERROR_CON_SLICE_COPY; // show what can be shown, as a player does
	rv = (*x->d)->Initialize(x->d, &p);
	if (rv != 0) { lab_destroy_dec(x->d); free(x); return (int)rv; }
	*out = x;
	return 0;
}

// lab_dec_decode decodes one frame's NAL units; when a picture is ready,
// *ready is 1 and its planes and strides are set.
static int lab_dec_decode(lab_dec* x, const unsigned char* src, int n, int* ready,
                          int* w, int* h, int* ystride, int* cstride) {
	memset(&x->out, 0, sizeof x->out);
	x->planes[0] = x->planes[1] = x->planes[2] = NULL;
	int st = (*x->d)->DecodeFrameNoDelay(x->d, src, n, x->planes, &x->out);
	*ready = x->out.iBufferStatus == 1;
	if (*ready) {
		*w = x->out.UsrData.sSystemBuffer.iWidth;
		*h = x->out.UsrData.sSystemBuffer.iHeight;
		*ystride = x->out.UsrData.sSystemBuffer.iStride[0];
		*cstride = x->out.UsrData.sSystemBuffer.iStride[1];
	}
	return st;
}

static unsigned char* lab_dec_plane(lab_dec* x, int i) { return x->planes[i]; }

// lab_dec_refs reports the last decoded frame's frame_num, its IDR's id,
// and whether it marked a long-term reference (and which frame_num).
static void lab_dec_refs(lab_dec* x, int* frame, int* idr, int* marks, int* marked) {
	*frame = *idr = *marks = *marked = 0;
	(*x->d)->GetOption(x->d, DECODER_OPTION_FRAME_NUM, frame);
	(*x->d)->GetOption(x->d, DECODER_OPTION_IDR_PIC_ID, idr);
	(*x->d)->GetOption(x->d, DECODER_OPTION_LTR_MARKING_FLAG, marks);
	(*x->d)->GetOption(x->d, DECODER_OPTION_LTR_MARKED_FRAME_NUM, marked);
}

static void lab_dec_free(lab_dec* x) {
	(*x->d)->Uninitialize(x->d);
	lab_destroy_dec(x->d);
	free(x);
}

static void lab_built_with(int* v) { v[0] = OPENH264_MAJOR; v[1] = OPENH264_MINOR; v[2] = OPENH264_REVISION; }
static void lab_loaded_version(int* v) { v[0] = lab_got[0]; v[1] = lab_got[1]; v[2] = lab_got[2]; }

#else
#define LAB_HAVE_HEADER 0
// Built without the header: nothing can be called. lab_load says why, and
// whether the library would have been there.
typedef struct { int unused; } lab_enc;
typedef struct { int unused; } lab_dec;
static const char* lab_load(void) {
	void* h = lab_open_lib();
	if (h) {
		dlclose(h);
		return "libopenh264 is installed but this binary was built without its header (wels/codec_api.h): install libopenh264-dev, run go clean -cache, and build again";
	}
	return "this binary was built without OpenH264's header (wels/codec_api.h) and libopenh264.so.7 is not installed: install Debian's libopenh264-dev, run go clean -cache, and build again";
}
static int lab_enc_new(lab_enc** out, int w, int h, int bitrate, float fps, int rc, int skip, int camera, int ltr) { return -4; }
static int lab_enc_encode(lab_enc* x, unsigned char* y, unsigned char* u, unsigned char* v, int w, int h, long long ts, int* type, int* size) { return -4; }
static void lab_enc_copy(lab_enc* x, unsigned char* dst) {}
static int lab_enc_force_idr(lab_enc* x) { return -4; }
static int lab_enc_set_bitrate(lab_enc* x, int bps) { return -4; }
static int lab_enc_set_framerate(lab_enc* x, float fps) { return -4; }
static int lab_enc_ltr_marked(lab_enc* x, unsigned int idr, int frame, int ok) { return -4; }
static int lab_enc_ltr_recover(lab_enc* x, unsigned int idr, int lastCorrect, int current) { return -4; }
static void lab_enc_free(lab_enc* x) {}
static int lab_dec_new(lab_dec** out) { return -4; }
static int lab_dec_decode(lab_dec* x, const unsigned char* src, int n, int* ready, int* w, int* h, int* ystride, int* cstride) { return -4; }
static unsigned char* lab_dec_plane(lab_dec* x, int i) { return NULL; }
static void lab_dec_refs(lab_dec* x, int* frame, int* idr, int* marks, int* marked) { *frame = *idr = *marks = *marked = 0; }
static void lab_dec_free(lab_dec* x) {}
static void lab_built_with(int* v) { v[0] = v[1] = v[2] = 0; }
static void lab_loaded_version(int* v) { v[0] = v[1] = v[2] = 0; }
#endif
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/nuvirahub/latencylab/internal/yuv"
)

// loadMu serialises lab_load, whose static state is not thread-safe.
var loadMu sync.Mutex

// Available returns nil when OpenH264 can run here, otherwise an error
// wrapping ErrUnavailable that says what is missing.
func Available() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if why := C.lab_load(); why != nil {
		return fmt.Errorf("%w: %s", ErrUnavailable, C.GoString(why))
	}
	return nil
}

// Version is the library's version, as it reports it; empty when it is
// not available.
func Version() string {
	if Available() != nil {
		return ""
	}
	var v [3]C.int
	C.lab_loaded_version(&v[0])
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
}

func codecErr(what string, rv C.int) error {
	if rv == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s returned %d", ErrCodec, what, int(rv))
}

// Encoder is one encoder session. Its methods must not be called
// concurrently (the caller serialises them, as encoder sessions do).
type Encoder struct {
	c      *C.lab_enc
	w, h   int
	closed bool
}

// NewEncoder starts an encoder session.
func NewEncoder(p Params) (*Encoder, error) {
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("openh264: %w", err)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	rc := map[RateControl]C.int{RateBitrate: 1, RateQuality: 0, RateTimestamp: 3, RateOff: -1}[p.RateControl]
	var c *C.lab_enc
	rv := C.lab_enc_new(&c, C.int(p.Width), C.int(p.Height), C.int(p.Bitrate), C.float(p.FrameRate), rc,
		cbool(p.FrameSkip), cbool(p.Camera), C.int(p.LongTermEvery))
	if err := codecErr("InitializeExt", rv); err != nil {
		return nil, err
	}
	e := &Encoder{c: c, w: p.Width, h: p.Height}
	runtime.SetFinalizer(e, (*Encoder).Close)
	return e, nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Encode encodes pic, taken at ts from the session's start (the rate
// control's clock, in milliseconds), appends the frame's NAL units
// (Annex B, start codes included) to dst and says what kind of frame it
// is. A Skipped frame appends nothing.
func (e *Encoder) Encode(dst []byte, pic *yuv.I420, ts time.Duration) ([]byte, FrameType, error) {
	if e.closed {
		return dst, Invalid, fmt.Errorf("%w: encoder closed", ErrCodec)
	}
	if pic.W != e.w || pic.H != e.h {
		return dst, Invalid, fmt.Errorf("openh264: a %dx%d picture for a %dx%d session", pic.W, pic.H, e.w, e.h)
	}
	var typ, size C.int
	rv := C.lab_enc_encode(e.c, (*C.uchar)(unsafe.Pointer(&pic.Y[0])), (*C.uchar)(unsafe.Pointer(&pic.U[0])),
		(*C.uchar)(unsafe.Pointer(&pic.V[0])), C.int(pic.W), C.int(pic.H), C.longlong(ts.Milliseconds()), &typ, &size)
	runtime.KeepAlive(pic)
	if err := codecErr("EncodeFrame", rv); err != nil {
		return dst, Invalid, err
	}
	t := FrameType(typ)
	if t < Invalid || t > Skipped {
		return dst, Invalid, fmt.Errorf("%w: frame type %d", ErrCodec, int(typ))
	}
	if t == Skipped || size == 0 {
		return dst, Skipped, nil
	}
	n := len(dst)
	dst = append(dst, make([]byte, int(size))...)
	C.lab_enc_copy(e.c, (*C.uchar)(unsafe.Pointer(&dst[n])))
	return dst, t, nil
}

// ForceKeyframe makes the next frame an IDR (ForceIntraFrame).
func (e *Encoder) ForceKeyframe() error {
	return codecErr("ForceIntraFrame", C.lab_enc_force_idr(e.c))
}

// SetBitrate changes the target bitrate of the running session
// (SetOption ENCODER_OPTION_BITRATE): no restart, no keyframe.
func (e *Encoder) SetBitrate(bps int) error {
	if bps <= 0 {
		return fmt.Errorf("openh264: bitrate %d not positive", bps)
	}
	return codecErr("SetOption(ENCODER_OPTION_BITRATE)", C.lab_enc_set_bitrate(e.c, C.int(bps)))
}

// SetFrameRate changes the frame rate the rate control budgets for
// (SetOption ENCODER_OPTION_FRAME_RATE).
func (e *Encoder) SetFrameRate(fps float64) error {
	return codecErr("SetOption(ENCODER_OPTION_FRAME_RATE)", C.lab_enc_set_framerate(e.c, C.float(fps)))
}

// LongTermMarked tells the encoder whether the decoder holds the
// long-term reference frame (ENCODER_LTR_MARKING_FEEDBACK): the encoder
// recovers from a loss only onto one the decoder confirmed.
func (e *Encoder) LongTermMarked(r Refs, ok bool) error {
	if e.closed {
		return fmt.Errorf("%w: encoder closed", ErrCodec)
	}
	return codecErr("SetOption(ENCODER_LTR_MARKING_FEEDBACK)", C.lab_enc_ltr_marked(e.c, C.uint(r.IDR), C.int(r.Marked), cbool(ok)))
}

// LongTermRecover asks the encoder to code its next frame onto a
// long-term reference the decoder holds (ENCODER_LTR_RECOVERY_REQUEST):
// last is the last frame the decoder decoded whole, current the frame it
// failed on. The encoder sends an IDR instead when it has no confirmed
// long-term reference at or before last.
func (e *Encoder) LongTermRecover(idr, last, current int) error {
	if e.closed {
		return fmt.Errorf("%w: encoder closed", ErrCodec)
	}
	return codecErr("SetOption(ENCODER_LTR_RECOVERY_REQUEST)", C.lab_enc_ltr_recover(e.c, C.uint(idr), C.int(last), C.int(current)))
}

// Close ends the session. Closing twice does nothing.
func (e *Encoder) Close() error {
	if !e.closed {
		e.closed = true
		C.lab_enc_free(e.c)
		runtime.SetFinalizer(e, nil)
	}
	return nil
}

// Decoder is one decoder session, fed frames in order.
type Decoder struct {
	c      *C.lab_dec
	closed bool
}

// NewDecoder starts a decoder session, with error concealment on (a
// damaged picture is shown patched from the previous one, as a player
// shows it).
func NewDecoder() (*Decoder, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	var c *C.lab_dec
	if err := codecErr("decoder Initialize", C.lab_dec_new(&c)); err != nil {
		return nil, err
	}
	d := &Decoder{c: c}
	runtime.SetFinalizer(d, (*Decoder).Close)
	return d, nil
}

// Decode decodes one frame's NAL units. When it yields a picture, the
// picture is copied into dst (resized when its size differs) and got is
// true. The state reports errors in the stream; the decoder goes on after
// them (a keyframe repairs it).
func (d *Decoder) Decode(data []byte, dst *yuv.I420) (got bool, state DecodeState, err error) {
	if d.closed {
		return false, 0, fmt.Errorf("%w: decoder closed", ErrCodec)
	}
	if len(data) == 0 {
		return false, 0, nil
	}
	var ready, w, h, ys, cs C.int
	st := C.lab_dec_decode(d.c, (*C.uchar)(unsafe.Pointer(&data[0])), C.int(len(data)), &ready, &w, &h, &ys, &cs)
	runtime.KeepAlive(data)
	state = DecodeState(st)
	if ready == 0 {
		return false, state, nil
	}
	W, H := int(w), int(h)
	if W <= 0 || H <= 0 || W%2 != 0 || H%2 != 0 {
		return false, state, fmt.Errorf("%w: decoded picture of %dx%d", ErrCodec, W, H)
	}
	if dst.W != W || dst.H != H {
		*dst = *yuv.New(W, H)
	}
	copyOut(dst.Y, W, H, C.lab_dec_plane(d.c, 0), int(ys))
	copyOut(dst.U, W/2, H/2, C.lab_dec_plane(d.c, 1), int(cs))
	copyOut(dst.V, W/2, H/2, C.lab_dec_plane(d.c, 2), int(cs))
	return true, state, nil
}

// Refs is what the decoder reports of the last frame it decoded; nothing
// once the decoder is closed.
func (d *Decoder) Refs() Refs {
	if d.closed {
		return Refs{}
	}
	var frame, idr, marks, marked C.int
	C.lab_dec_refs(d.c, &frame, &idr, &marks, &marked)
	return Refs{Frame: int(frame), IDR: int(idr), MarksLongTerm: marks != 0, Marked: int(marked)}
}

// copyOut copies a plane of the decoder's buffer, rows stride apart, into
// a packed plane of w x h.
func copyOut(dst []byte, w, h int, src *C.uchar, stride int) {
	plane := unsafe.Slice((*byte)(unsafe.Pointer(src)), (h-1)*stride+w)
	for y := range h {
		copy(dst[y*w:(y+1)*w], plane[y*stride:y*stride+w])
	}
}

// Close ends the session. Closing twice does nothing.
func (d *Decoder) Close() error {
	if !d.closed {
		d.closed = true
		C.lab_dec_free(d.c)
		runtime.SetFinalizer(d, nil)
	}
	return nil
}

// BuiltWith is the header version the binding was compiled against, empty
// when it was compiled without the header.
func BuiltWith() string {
	var v [3]C.int
	C.lab_built_with(&v[0])
	if v[0] == 0 && v[1] == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
}
