//! Cutting one decode of a source into clips by presentation time.
//!
//! A source's frames arrive once, in time order, each with its
//! presentation time; every clip `[start, end)` takes its frames from them:
//! at the source's own rate, the frames whose times fall in the span; at a
//! frame rate `R`, one frame for each time `start + k / R` in the span, the
//! frame on screen then (the last one shown at or before it: the first
//! frame for times before it). Times are the source's, so a variable frame
//! rate is followed, not assumed away, and clips that overlap share the
//! frames they both show.

/// Times closer than this are the same time: the rounding of a time base
/// (a microsecond is finer than any of ffmpeg's).
pub(crate) const TIME_EPS: f64 = 1e-6;

/// How far past the end of its video a clip may end (seconds) and still
/// be cut, short: lists often round a video's length up.
pub const END_SLACK: f64 = 0.5;

/// One clip of a source, in seconds of the source; `end` may be infinite
/// (to the end of the video).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// Start, included.
    pub start: f64,
    /// End, excluded.
    pub end: f64,
}

impl Span {
    /// The whole video.
    pub const WHOLE: Span = Span {
        start: 0.0,
        end: f64::INFINITY,
    };
}

/// One use of a decoded frame: clip `clip` takes it, as its frame at `time`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Use {
    pub clip: usize,
    pub time: f64,
}

struct ClipState {
    span: Span,
    /// At a frame rate: the next grid point's number.
    next: u64,
    frames: usize,
    done: bool,
}

/// Routes a source's decoded frames to its clips (see the module's doc).
/// Generic over the frame, which it holds back by one at a frame rate: a
/// frame is on screen until the next one's time.
pub(crate) struct Cutter<F> {
    clips: Vec<ClipState>,
    rate: Option<f64>,
    /// At a frame rate, the last frame and its time, whose uses wait for
    /// the next frame.
    held: Option<(F, f64)>,
    last_time: Option<f64>,
}

/// What became of a clip when the source ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// It got this many frames.
    Frames(usize),
    /// It cannot be cut from this video.
    Outside(String),
}

impl<F> Cutter<F> {
    pub(crate) fn new(spans: &[Span], rate: Option<f64>) -> Cutter<F> {
        Cutter {
            clips: spans
                .iter()
                .map(|&span| ClipState {
                    span,
                    next: 0,
                    frames: 0,
                    done: false,
                })
                .collect(),
            rate,
            held: None,
            last_time: None,
        }
    }

    /// Takes the next decoded frame (times must increase); gives `emit`
    /// each frame whose uses are now known, with them (never with none).
    pub(crate) fn push<E>(
        &mut self,
        frame: F,
        time: f64,
        emit: &mut impl FnMut(F, &[Use]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.last_time = Some(time);
        match self.rate {
            None => {
                let mut uses = Vec::new();
                for (k, c) in self.clips.iter_mut().enumerate() {
                    if c.done {
                        continue;
                    }
                    if time >= c.span.end - TIME_EPS {
                        c.done = true;
                    } else if time >= c.span.start - TIME_EPS {
                        c.frames += 1;
                        uses.push(Use { clip: k, time });
                    }
                }
                if !uses.is_empty() {
                    emit(frame, &uses)?;
                }
            }
            Some(rate) => {
                if let Some((held, _)) = self.held.take() {
                    let uses = self.grid_uses(rate, time);
                    if !uses.is_empty() {
                        emit(held, &uses)?;
                    }
                }
                self.held = Some((frame, time));
            }
        }
        Ok(())
    }

    /// The grid points of every clip before `until`, all taken by the held
    /// frame; marks the clips whose grid is used up.
    fn grid_uses(&mut self, rate: f64, until: f64) -> Vec<Use> {
        let mut uses = Vec::new();
        for (k, c) in self.clips.iter_mut().enumerate() {
            while !c.done {
                #[allow(clippy::cast_precision_loss)] // grid numbers stay far below 2^53
                let t = c.span.start + c.next as f64 / rate;
                if t >= c.span.end - TIME_EPS {
                    c.done = true;
                } else if t < until - TIME_EPS {
                    uses.push(Use { clip: k, time: t });
                    c.next += 1;
                    c.frames += 1;
                } else {
                    break;
                }
            }
        }
        uses
    }

    /// Ends the source, its last frame shown until `end` (its time plus
    /// its duration); gives the held frame its uses, and says what each
    /// clip got.
    pub(crate) fn finish<E>(
        &mut self,
        end: f64,
        emit: &mut impl FnMut(F, &[Use]) -> Result<(), E>,
    ) -> Result<Vec<Outcome>, E> {
        if let (Some(rate), Some((held, time))) = (self.rate, self.held.take()) {
            let until = end.max(time + TIME_EPS * 2.0);
            let uses = self.grid_uses(rate, until);
            if !uses.is_empty() {
                emit(held, &uses)?;
            }
        }
        let video_end = self.last_time.map(|_| end);
        Ok(self
            .clips
            .iter()
            .map(|c| {
                let Some(video_end) = video_end else {
                    return Outcome::Outside("the video has no frames".into());
                };
                let s = c.span;
                if s.start >= video_end - TIME_EPS {
                    Outcome::Outside(format!(
                        "span [{}, {}) s starts after the video, which ends at {video_end:.3} s",
                        s.start, s.end
                    ))
                } else if s.end.is_finite() && s.end > video_end + END_SLACK {
                    Outcome::Outside(format!(
                        "span [{}, {}) s ends {:.3} s after the video, which ends at {video_end:.3} s",
                        s.start,
                        s.end,
                        s.end - video_end
                    ))
                } else if c.frames == 0 {
                    Outcome::Outside(format!(
                        "no frame of the video is shown in span [{}, {}) s",
                        s.start, s.end
                    ))
                } else {
                    Outcome::Frames(c.frames)
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cuts frames at `times` (the last shown until `end`); each clip's
    /// (frame number, time) list, and the outcomes.
    fn cut(
        spans: &[Span],
        rate: Option<f64>,
        times: &[f64],
        end: f64,
    ) -> (Vec<Vec<(usize, f64)>>, Vec<Outcome>) {
        let mut got = vec![Vec::new(); spans.len()];
        let mut cutter = Cutter::new(spans, rate);
        let mut emit = |frame: usize, uses: &[Use]| -> Result<(), ()> {
            for u in uses {
                got[u.clip].push((frame, u.time));
            }
            Ok(())
        };
        for (j, &t) in times.iter().enumerate() {
            cutter.push(j, t, &mut emit).unwrap();
        }
        let outcomes = cutter.finish(end, &mut emit).unwrap();
        (got, outcomes)
    }

    fn span(start: f64, end: f64) -> Span {
        Span { start, end }
    }

    #[test]
    fn native_rate_takes_the_frames_in_each_span() {
        let times: Vec<f64> = (0..10).map(|i| f64::from(i) * 0.5).collect();
        let (got, out) = cut(
            &[span(1.0, 2.5), span(2.0, 3.0), Span::WHOLE],
            None,
            &times,
            5.0,
        );
        assert_eq!(got[0], [(2, 1.0), (3, 1.5), (4, 2.0)]);
        assert_eq!(got[1], [(4, 2.0), (5, 2.5)]);
        assert_eq!(got[2].len(), 10);
        assert_eq!(
            out,
            [Outcome::Frames(3), Outcome::Frames(2), Outcome::Frames(10)]
        );
    }

    /// A variable frame rate: 10 fps, then a gap of 0.5 s, then 10 fps. At
    /// 4 fps each grid point takes the frame on screen then.
    #[test]
    fn a_frame_rate_follows_the_timestamps() {
        let times = [0.0, 0.1, 0.2, 0.3, 0.8, 0.9, 1.0, 1.1];
        let (got, out) = cut(&[span(0.0, 1.2)], Some(4.0), &times, 1.2);
        // Grid 0, .25, .5, .75, 1.0: frames 0, 2, 3 (on screen .3-.8),
        // 3, 6.
        assert_eq!(got[0], [(0, 0.0), (2, 0.25), (3, 0.5), (3, 0.75), (6, 1.0)]);
        assert_eq!(out, [Outcome::Frames(5)]);
    }

    #[test]
    fn grid_times_before_the_first_frame_take_it_and_clips_start_their_own_grid() {
        let times = [0.05, 0.55, 1.05];
        let (got, _) = cut(&[span(0.0, 1.0), span(0.3, 0.8)], Some(2.0), &times, 1.55);
        assert_eq!(got[0], [(0, 0.0), (0, 0.5)]);
        assert_eq!(got[1], [(0, 0.3)]);
    }

    #[test]
    fn spans_outside_the_video_are_refused() {
        let times = [0.0, 1.0, 2.0];
        let (_, out) = cut(
            &[
                span(3.5, 4.0),
                span(2.0, 3.4),
                span(2.0, 3.6),
                span(1.2, 1.5),
            ],
            None,
            &times,
            3.0,
        );
        assert!(matches!(&out[0], Outcome::Outside(m) if m.contains("starts after the video")));
        assert_eq!(out[1], Outcome::Frames(1));
        assert!(matches!(&out[2], Outcome::Outside(m) if m.contains("0.600 s after the video")));
        assert!(matches!(&out[3], Outcome::Outside(m) if m.contains("no frame")));
        let (_, out) = cut(&[Span::WHOLE], None, &[], 0.0);
        assert!(matches!(&out[0], Outcome::Outside(m) if m.contains("no frames")));
    }
}
