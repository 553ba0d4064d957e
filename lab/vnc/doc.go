// Package vnc measures real VNC servers through the lab's network: it
// starts a server (x11vnc on an Xvfb display, or TigerVNC's Xvnc) on this
// host, connects the lab's RFB client (lab/vnc/rfb) to it from inside a
// scenario's network through netem's kernel mode, drives the server's X
// display with the screen timeline (lab/vnc/screendrive, lab/vnc/xscreen)
// and turns what the client saw into a result of the lab's format
// (lab/result), so that lab report reads it as any other run.
//
// Each drawn version of the screen carries a marker; its capture instant
// is when the X server had drawn it and its display instant when the
// client had decoded the update carrying it, both on this host's clock.
package vnc
