use super::*;

#[test]
fn a_request_emits_and_parses_back() {
    let r = Request::get("www.example.com", "/page/3", false);
    let bytes = r.emit();
    assert_eq!(
        bytes,
        b"GET /page/3 HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: elvis-web/0.1\r\n\
          Accept: */*\r\n\r\n"
            .to_vec()
    );
    let (back, n) = parse_request(&bytes).unwrap().unwrap();
    assert_eq!((back, n), (r, bytes.len()));
}

#[test]
fn connection_close_is_sent_and_read_on_both_sides() {
    let r = Request::get("s", "/", true);
    let bytes = r.emit();
    assert!(bytes.windows(19).any(|w| w == b"Connection: close\r\n"));
    assert!(parse_request(&bytes).unwrap().unwrap().0.close);
    let res = Response {
        status: 200,
        close: true,
        framing: Framing::Length(3),
    };
    let (back, _) = parse_response(&res.emit("text/plain"), "GET")
        .unwrap()
        .unwrap();
    assert_eq!(back, res);
}

#[test]
fn http_1_0_closes_unless_asked_to_keep_alive() {
    let (r, _) = parse_request(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
    assert!(r.close);
    let (r, _) = parse_request(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap()
        .unwrap();
    assert!(!r.close);
    let (r, _) = parse_request(b"GET / HTTP/1.1\r\n\r\n").unwrap().unwrap();
    assert!(!r.close);
}

#[test]
fn a_response_head_is_exact_bytes_and_parses_back() {
    let res = Response {
        status: 404,
        close: false,
        framing: Framing::Length(0),
    };
    assert_eq!(
        res.emit("text/html"),
        b"HTTP/1.1 404 Not Found\r\nServer: elvis-web/0.1\r\nContent-Length: 0\r\n\
          Content-Type: text/html\r\n\r\n"
            .to_vec()
    );
    let res = Response {
        status: 503,
        close: false,
        framing: Framing::Chunked,
    };
    let b = res.emit("text/html");
    assert!(b.starts_with(b"HTTP/1.1 503 Service Unavailable\r\n"));
    assert_eq!(parse_response(&b, "GET").unwrap().unwrap().0, res);
}

#[test]
fn an_incomplete_head_asks_for_more_and_a_bad_one_is_malformed() {
    assert_eq!(parse_request(b"GET / HTTP/1.1\r\nHost: a").unwrap(), None);
    assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\n", "GET").unwrap(), None);
    assert!(matches!(
        parse_request(b"GET\x00/ HTTP/1.1\r\n\r\n"),
        Err(Error::Malformed(_))
    ));
    assert!(matches!(
        parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "GET"),
        Err(Error::Malformed(_))
    ));
    assert!(matches!(
        parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "GET"
        ),
        Err(Error::Malformed(_))
    ));
    let long = [b"GET / HTTP/1.1\r\nX: ".as_slice(), &[b'a'; MAX_HEAD]].concat();
    assert_eq!(parse_request(&long), Err(Error::HeadTooLong));
}

#[test]
fn framing_follows_rfc_9112_section_6_3() {
    let f = |head: &[u8], method: &str| parse_response(head, method).unwrap().unwrap().0;
    // Chunked overrides a Content-Length.
    let r = f(
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET",
    );
    assert_eq!(r.framing, Framing::Chunked);
    // No length: until close, which also ends the connection.
    let r = f(b"HTTP/1.1 200 OK\r\n\r\n", "GET");
    assert_eq!((r.framing, r.close), (Framing::UntilClose, true));
    // HEAD, 204 and 304 have no body whatever the fields say.
    let r = f(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", "HEAD");
    assert_eq!(r.framing, Framing::Length(0));
    let r = f(b"HTTP/1.1 304 Not Modified\r\n\r\n", "GET");
    assert_eq!((r.framing, r.close), (Framing::Length(0), false));
}

#[test]
fn chunked_coding_is_exact() {
    assert_eq!(chunked(b"", 4), b"0\r\n\r\n".to_vec());
    assert_eq!(
        chunked(b"hello world", 4),
        b"4\r\nhell\r\n4\r\no wo\r\n3\r\nrld\r\n0\r\n\r\n".to_vec()
    );
    let big = vec![b'x'; 300];
    assert!(chunked(&big, 256).starts_with(b"100\r\n"));
    let coded = chunked(b"hello world", 4);
    assert_eq!(
        decode_chunked(&coded).unwrap(),
        Some((b"hello world".to_vec(), coded.len()))
    );
}

#[test]
fn chunked_decoding_takes_extensions_and_trailers_and_waits_for_the_end() {
    let coded = b"5;name=v\r\nhello\r\n0\r\nX-T: 1\r\n\r\nNEXT";
    assert_eq!(
        decode_chunked(coded).unwrap(),
        Some((b"hello".to_vec(), coded.len() - 4))
    );
    for n in 0..coded.len() - 4 {
        assert_eq!(decode_chunked(&coded[..n]).unwrap(), None, "prefix {n}");
    }
    assert!(decode_chunked(b"5\r\nhelloXX0\r\n\r\n").is_err());
    assert!(decode_chunked(b"zz\r\n").is_err());
}

#[test]
fn links_finds_anchors_and_images_in_any_case_and_quoting() {
    let html = br#"<html><A HREF="/page/1">one</A><img src='/obj/10' alt=x>
        <a class=c href=/page/2>two</a><img alt="no source"><p>text</p>
        <IMG SRC="/obj/20"></html>"#;
    let (hrefs, srcs) = links(html);
    assert_eq!(hrefs, ["/page/1", "/page/2"]);
    assert_eq!(srcs, ["/obj/10", "/obj/20"]);
}
