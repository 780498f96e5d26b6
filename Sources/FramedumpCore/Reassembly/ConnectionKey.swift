/// A connection's 4-tuple with its two endpoints in a fixed order, so both directions match.
struct ConnectionKey: Hashable {
    let a: Endpoint
    let b: Endpoint

    init(_ x: Endpoint, _ y: Endpoint) {
        if x < y { a = x; b = y } else { a = y; b = x }
    }

}
