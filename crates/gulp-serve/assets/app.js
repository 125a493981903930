// gulp serve: the item page's player (play/pause at a chosen rate, frame
// steps, keyboard), compiled into the binary. Other pages need no script.
"use strict";
(function () {
  const box = document.querySelector(".player");
  if (!box) return;
  const img = document.getElementById("player");
  const play = document.getElementById("play");
  const fps = document.getElementById("fps");
  const seek = document.getElementById("seek");
  const label = document.getElementById("frame-no");
  const strip = Array.from(document.querySelectorAll(".strip img"));
  const frames = Number(box.dataset.frames);
  const src = box.dataset.src;
  // Frames already fetched, so that playback does not wait on the network
  // after the first loop.
  const cache = new Map();
  let current = 0;
  let timer = null;

  function url(k) { return src + "&frame=" + k; }
  function preload(k) {
    if (!cache.has(k)) { const i = new Image(); i.src = url(k); cache.set(k, i); }
  }
  function show(k) {
    current = ((k % frames) + frames) % frames;
    img.src = url(current);
    img.alt = "frame " + current;
    img.dataset.frame = String(current);
    seek.value = String(current);
    label.textContent = String(current);
    strip.forEach((s, i) => s.classList.toggle("current", i === current));
    preload((current + 1) % frames);
  }
  function rate() {
    const r = Number(fps.value);
    return r >= 1 && r <= 60 ? r : 8;
  }
  function start() {
    stop();
    timer = setInterval(() => show(current + 1), 1000 / rate());
    play.textContent = "pause";
    box.dataset.playing = "1";
  }
  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    play.textContent = "play";
    box.dataset.playing = "0";
  }
  function toggle() { if (timer === null) start(); else stop(); }

  play.addEventListener("click", toggle);
  fps.addEventListener("change", () => { if (timer !== null) start(); });
  seek.addEventListener("input", () => { stop(); show(Number(seek.value)); });
  strip.forEach((s, i) => s.addEventListener("click", () => { stop(); show(i); }));
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement) return;
    if (e.key === " ") { e.preventDefault(); toggle(); }
    else if (e.key === "ArrowRight") { stop(); show(current + 1); }
    else if (e.key === "ArrowLeft") { stop(); show(current - 1); }
    else if (e.key === "+" || e.key === "=") { fps.value = String(Math.min(60, rate() + 1)); if (timer !== null) start(); }
    else if (e.key === "-") { fps.value = String(Math.max(1, rate() - 1)); if (timer !== null) start(); }
  });
  show(0);
})();
