// gulp serve: the item page's player (play/pause at a chosen rate, frame
// steps, keyboard), compiled into the binary. Other pages need no script.
// An item with sound plays its <audio>, and the frame shown is the one
// whose time (data-times, the item's frame times) the sound has reached.
"use strict";
(function () {
  const box = document.querySelector(".player");
  if (!box) return;
  const img = document.getElementById("player");
  const play = document.getElementById("play");
  const fps = document.getElementById("fps");
  const seek = document.getElementById("seek");
  const label = document.getElementById("frame-no");
  const audio = document.getElementById("audio");
  const strip = Array.from(document.querySelectorAll(".strip img"));
  const frames = Number(box.dataset.frames);
  const src = box.dataset.src;
  const times = box.dataset.times ? JSON.parse(box.dataset.times) : null;
  const audioStart = Number(box.dataset.audioStart || 0);
  // Frames already fetched, so that playback does not wait on the network
  // after the first loop.
  const cache = new Map();
  let current = 0;
  let timer = null;
  let follow = null;
  // The sound's time a picked frame moved it to: while the sound stays
  // there, that frame stays shown (it may lie before the sound starts).
  let pinned = null;

  function url(k) { return src + "&frame=" + k; }
  function preload(k) {
    if (!cache.has(k)) { const i = new Image(); i.src = url(k); cache.set(k, i); }
  }
  function show(k) {
    current = ((k % frames) + frames) % frames;
    if (img.dataset.frame !== String(current)) {
      img.src = url(current);
      img.alt = "frame " + current;
      img.dataset.frame = String(current);
    }
    seek.value = String(current);
    label.textContent = String(current);
    strip.forEach((s, i) => s.classList.toggle("current", i === current));
    preload((current + 1) % frames);
  }
  function rate() {
    const r = fps ? Number(fps.value) : 8;
    return r >= 1 && r <= 60 ? r : 8;
  }
  // The time of frame k, and the last frame shown at time t (seconds of
  // the source, the clock of the frame times and of the sound's start).
  function timeOf(k) { return times ? times[k] : k / rate(); }
  function frameAt(t) {
    let lo = 0, hi = frames - 1;
    if (t < timeOf(0)) return 0;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      // A media element keeps its time to the microsecond or so.
      if (timeOf(mid) <= t + 1e-3) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  function playing(on) {
    play.textContent = on ? "pause" : "play";
    box.dataset.playing = on ? "1" : "0";
  }

  function start() {
    if (audio) { audio.play().catch(() => playing(false)); return; }
    stop();
    timer = setInterval(() => show(current + 1), 1000 / rate());
    playing(true);
  }
  function stop() {
    if (audio) { audio.pause(); return; }
    if (timer !== null) clearInterval(timer);
    timer = null;
    playing(false);
  }
  function isPlaying() { return audio ? !audio.paused : timer !== null; }
  function toggle() { if (isPlaying()) stop(); else start(); }
  // A frame the user picked: with sound, the sound goes to its time.
  function pick(k) {
    stop();
    show(k);
    if (audio) {
      audio.currentTime = Math.max(0, timeOf(current) - audioStart);
      pinned = audio.currentTime;
    }
  }
  function sync() {
    if (pinned !== null && Math.abs(audio.currentTime - pinned) < 1e-3) return;
    pinned = null;
    show(frameAt(audioStart + audio.currentTime));
  }

  if (audio) {
    const loop = () => { sync(); follow = requestAnimationFrame(loop); };
    audio.addEventListener("play", () => { playing(true); if (follow === null) loop(); });
    audio.addEventListener("pause", () => {
      playing(false);
      if (follow !== null) cancelAnimationFrame(follow);
      follow = null;
      sync();
    });
    audio.addEventListener("seeked", sync);
    // A paused seek through the audio's own controls moves the frame too.
    audio.addEventListener("timeupdate", () => { if (follow === null) sync(); });
  }
  play.addEventListener("click", toggle);
  if (fps) fps.addEventListener("change", () => { if (timer !== null) start(); });
  seek.addEventListener("input", () => pick(Number(seek.value)));
  strip.forEach((s, i) => s.addEventListener("click", () => pick(i)));
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement) return;
    // The audio's own controls take their keys.
    if (e.target instanceof HTMLAudioElement) return;
    if (e.key === " ") { e.preventDefault(); toggle(); }
    else if (e.key === "ArrowRight") pick(current + 1);
    else if (e.key === "ArrowLeft") pick(current - 1);
    else if (!fps) return;
    else if (e.key === "+" || e.key === "=") { fps.value = String(Math.min(60, rate() + 1)); if (timer !== null) start(); }
    else if (e.key === "-") { fps.value = String(Math.max(1, rate() - 1)); if (timer !== null) start(); }
  });
  show(0);
})();
