//! The HTTP client for plain-HTTP endpoints (`AWS_ENDPOINT_URL=http://...`):
//! hyper's, over TCP connections that acknowledge each read at once.
//!
//! Some S3-compatible servers (Garage 2.5 among them) write a response's
//! head and its body in two writes, on a socket that keeps Nagle's algorithm
//! on: the body then waits until the client acknowledges the head. Once a
//! connection has carried a few requests, the client's kernel delays that
//! acknowledgement by up to 40 ms (it expects to send it with the next
//! request), and so a range request of a kilobyte takes 40 ms where it takes
//! a millisecond. Setting `TCP_QUICKACK` after each read sends an
//! acknowledgement the kernel held back at once. `object_store`'s own client
//! (reqwest) gives no access to its sockets, so this one is built from the
//! same parts (hyper's pooled HTTP/1.1 client, `object_store`'s
//! [`HttpService`]) and keeps its behaviour: the connect timeout, a deadline
//! for the whole response (head and body), keep-alive, and the kinds of error
//! that `object_store` retries. It serves plain HTTP only where
//! `AWS_ALLOW_HTTP` allows it (elsewhere reqwest refuses the endpoint, as
//! before); HTTPS endpoints, and any endpoint while an HTTP proxy is
//! configured, use reqwest.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use object_store::client::{
    HttpClient, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody, HttpResponse,
    HttpResponseBody, HttpService,
};
use object_store::{ClientOptions, client::HttpConnector as StoreConnector};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// Whether a bucket's requests to `endpoint` go through this client: a
/// plain-HTTP endpoint that `AWS_ALLOW_HTTP` allows (`allow_http`; without
/// it reqwest refuses the endpoint), no HTTP proxy in the environment
/// (reqwest honours one), and `GULP_S3_HTTP` not `reqwest` (which keeps
/// `object_store`'s own client).
pub(crate) fn wanted(allow_http: bool, endpoint: Option<&str>) -> bool {
    let proxied = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    let reqwest = std::env::var("GULP_S3_HTTP").is_ok_and(|v| v.trim() == "reqwest");
    allow_http
        && !proxied
        && !reqwest
        && endpoint.is_some_and(|e| e.trim().to_ascii_lowercase().starts_with("http://"))
}

/// Makes the [`QuickAckClient`] of a bucket (`object_store` asks for one
/// per store).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QuickAckConnector {
    /// The longest a connection may take to open.
    pub(crate) connect_timeout: Duration,
    /// The longest a request may take, its body included.
    pub(crate) timeout: Duration,
}

impl StoreConnector for QuickAckConnector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(self.connect_timeout));
        http.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(Connect(http));
        Ok(HttpClient::new(QuickAckClient {
            client,
            timeout: self.timeout,
        }))
    }
}

/// An [`HttpService`] over hyper's pooled client and [`QuickAck`] sockets.
#[derive(Debug)]
struct QuickAckClient {
    client: Client<Connect, HttpRequestBody>,
    timeout: Duration,
}

#[async_trait::async_trait]
impl HttpService for QuickAckClient {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let deadline = Instant::now() + self.timeout;
        let response = tokio::time::timeout_at(deadline, self.client.request(req))
            .await
            .map_err(|_| timed_out())?
            .map_err(|e| {
                let kind = if e.is_connect() {
                    HttpErrorKind::Connect
                } else {
                    kind_of(&e, HttpErrorKind::Unknown)
                };
                HttpError::new(kind, e)
            })?;
        let (parts, body) = response.into_parts();
        let body = Deadline {
            body,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        };
        Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(body)))
    }
}

fn timed_out() -> HttpError {
    HttpError::new(
        HttpErrorKind::Timeout,
        io::Error::new(io::ErrorKind::TimedOut, "the request took too long"),
    )
}

/// What `object_store` should make of `e`, from its causes (as it classifies
/// reqwest's errors): a connection closed before the response is a request
/// to send again, a reset or cut transfer an interrupted one.
fn kind_of(e: &(dyn std::error::Error + 'static), otherwise: HttpErrorKind) -> HttpErrorKind {
    let mut source = Some(e);
    while let Some(e) = source {
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_closed() || h.is_incomplete_message() || h.is_body_write_aborted() {
                return HttpErrorKind::Request;
            }
            if h.is_timeout() {
                return HttpErrorKind::Timeout;
            }
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            match io.kind() {
                io::ErrorKind::TimedOut => return HttpErrorKind::Timeout,
                io::ErrorKind::ConnectionAborted
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof => return HttpErrorKind::Interrupted,
                _ => {}
            }
        }
        source = e.source();
    }
    otherwise
}

/// A response body that fails once the request's deadline has passed (as
/// reqwest's timeout covers the body).
struct Deadline {
    body: Incoming,
    sleep: Pin<Box<Sleep>>,
}

impl Body for Deadline {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| {
                f.map_err(|e| {
                    let kind = kind_of(&e, HttpErrorKind::Interrupted);
                    HttpError::new(kind, e)
                })
            }));
        }
        ready!(this.sleep.as_mut().poll(cx));
        Poll::Ready(Some(Err(timed_out())))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// hyper's connector, its connections wrapped in [`QuickAck`].
#[derive(Debug, Clone)]
struct Connect(HttpConnector);

impl tower_service::Service<http::Uri> for Connect {
    type Response = QuickAck;
    type Error = <HttpConnector as tower_service::Service<http::Uri>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<QuickAck, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let connecting = self.0.call(uri);
        Box::pin(async move { connecting.await.map(QuickAck) })
    }
}

/// A TCP connection that, after each read, acknowledges what it received at
/// once (`TCP_QUICKACK`) instead of when the kernel's delayed-ACK timer
/// fires.
#[derive(Debug)]
pub(crate) struct QuickAck(TokioIo<TcpStream>);

impl QuickAck {
    fn ack_now(&self) {
        // Best effort: on a system without the option the connection works
        // as any other (with the kernel's delayed acknowledgements).
        let _ = socket2::SockRef::from(self.0.inner()).set_tcp_quickack(true);
    }
}

impl Read for QuickAck {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let read = Pin::new(&mut self.0).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            self.ack_now();
        }
        read
    }
}

impl Write for QuickAck {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl Connection for QuickAck {
    fn connected(&self) -> Connected {
        self.0.connected()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};
    use std::net::TcpListener;

    /// A server that answers each request on a connection as Garage does:
    /// the head and the body in two writes, Nagle's algorithm on. With
    /// `body: false` it sends the head only, and then nothing.
    fn server(body: bool) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                        while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                            seen.drain(..end + 4);
                            let head = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n";
                            if stream.write_all(head).is_err()
                                || body && stream.write_all(b"hello").is_err()
                            {
                                return;
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// How long `requests` requests and responses take over one
    /// connection to [`server`], through [`QuickAck`] or the plain stream.
    fn exchanges(requests: usize, wrapped: bool) -> Duration {
        let addr = server(true);
        runtime().block_on(async move {
            let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
            io.inner().set_nodelay(true).unwrap();
            let start = std::time::Instant::now();
            macro_rules! exchange {
                ($io:expr) => {{
                    let (mut send, conn) =
                        hyper::client::conn::http1::handshake($io).await.unwrap();
                    tokio::spawn(conn);
                    for _ in 0..requests {
                        let req = http::Request::get(format!("http://{addr}/x"))
                            .body(http_body_util::Empty::<Bytes>::new())
                            .unwrap();
                        let res = send.send_request(req).await.unwrap();
                        let body = http_body_util::BodyExt::collect(res.into_body()).await;
                        assert_eq!(&body.unwrap().to_bytes()[..], b"hello");
                    }
                }};
            }
            if wrapped {
                exchange!(QuickAck(io));
            } else {
                exchange!(io);
            }
            start.elapsed()
        })
    }

    #[test]
    fn no_response_waits_for_a_delayed_acknowledgement() {
        // Over a plain connection each response's body waits for the
        // kernel's delayed ACK of its head (40 ms at least); the server is
        // a faithful one if 8 exchanges take 160 ms or more. Through
        // QuickAck they take well under a millisecond each; 160 ms for 8
        // leaves a margin of some hundred times for a loaded machine. (The
        // stall is seen in time only: the kernel's delayed-ACK state cannot
        // be read back reliably.)
        let plain = exchanges(8, false);
        let quick = exchanges(8, true);
        assert!(plain >= Duration::from_millis(160), "plain: {plain:?}");
        assert!(quick < Duration::from_millis(160), "QuickAck: {quick:?}");
    }

    #[test]
    fn responses_arrive_and_a_stalled_body_times_out() {
        let connector = QuickAckConnector {
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_millis(300),
        };
        let client = StoreConnector::connect(&connector, &ClientOptions::new()).unwrap();
        let get = |addr: std::net::SocketAddr| {
            http::Request::get(format!("http://{addr}/bucket/key"))
                .body(HttpRequestBody::from(Bytes::new()))
                .unwrap()
        };
        runtime().block_on(async {
            let good = server(true);
            for _ in 0..3 {
                let res = client.execute(get(good)).await.unwrap();
                assert_eq!(res.status(), 200);
                assert_eq!(&res.into_body().bytes().await.unwrap()[..], b"hello");
            }
            // The head comes, the body never does: the request's deadline
            // fails the body, as a timeout (which object_store retries).
            let stalled = server(false);
            let res = client.execute(get(stalled)).await.unwrap();
            let err = res.into_body().bytes().await.unwrap_err();
            assert_eq!(err.kind(), HttpErrorKind::Timeout, "{err}");
            // Nothing listens: a connect error.
            let closed = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap();
            let err = client.execute(get(closed)).await.unwrap_err();
            assert_eq!(err.kind(), HttpErrorKind::Connect, "{err}");
        });
    }
}
