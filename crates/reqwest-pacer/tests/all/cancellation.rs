use crate::support::*;
use std::time::Duration;

#[tokio::test]
async fn dropped_request_futures_free_their_places_and_leak_nothing() {
    let (server, script) = scripted(vec![ok()]).await;
    let mut o = fixed_rate(60.0);
    o.max_wait = Duration::from_secs(600);
    let pacer = pacer(o);
    let client = client(&pacer);
    client.get(server.uri()).send().await.unwrap(); // empties the bucket
    let endpoint = crate::retry_after::endpoint(&server);
    let waiting: Vec<_> = (0..50)
        .map(|_| {
            let client = client.clone();
            let url = server.uri();
            tokio::spawn(async move { client.get(url).send().await })
        })
        .collect();
    // Let them all join the queue.
    for _ in 0..200 {
        if pacer
            .state("api", &endpoint)
            .unwrap()
            .limiter
            .unwrap()
            .queue_len
            == 50
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        pacer
            .state("api", &endpoint)
            .unwrap()
            .limiter
            .unwrap()
            .queue_len,
        50
    );
    for t in &waiting {
        t.abort();
    }
    for t in waiting {
        let _ = t.await;
    }
    let s = pacer.state("api", &endpoint).unwrap().limiter.unwrap();
    assert_eq!(s.queue_len, 0);
    assert_eq!(s.queued_units, 0.0);
    assert_eq!(script.calls(), 1, "no dropped request was sent");
    // The next request is first in line again.
    client.get(server.uri()).send().await.unwrap();
    assert_eq!(script.calls(), 2);
}
