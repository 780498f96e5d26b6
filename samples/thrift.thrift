// The IDL of samples/thrift.pcap (recorded by make_thrift_sample.py): a small inventory
// service whose calls, replies and exceptions carry every type of Thrift's binary protocol.

namespace py inventory

enum Color {
  RED = 1,
  GREEN = 2,
  BLUE = 3,
  UNPAINTED = 0,
}

struct Point {
  1: i32 x,
  2: i32 y,
}

struct Box {
  1: double width,
  2: double height,
  3: Point corner,            // a struct in a struct
}

struct Item {
  1: i64 id,
  2: string name,
  3: bool in_stock,
  4: i8 grade,
  5: i16 shelf,
  6: i32 quantity,
  7: double price,
  8: binary checksum,
  9: Color color,
  10: Box box,
  11: list<string> tags,
  12: set<string> labels,
  13: map<string, i32> stock,
  14: optional string note,   // absent when not set
}

struct Numbers {
  1: bool flag,
  2: i8 tiny,
  3: i16 small,
  4: i32 medium,
  5: i64 large,
  6: double real,
  7: list<i32> values,
}

exception NotFound {
  1: i64 id,
  2: string reason,
}

service Inventory {
  void ping(),
  string echo(1: string text),
  i64 put_item(1: Item item),
  Item get_item(1: i64 id) throws (1: NotFound missing),
  list<Item> find(1: list<i32> ids, 2: list<string> names),
  map<i32, Item> index(1: set<string> labels),
  map<string, list<i32>> histogram(1: map<string, i32> counts, 2: i16 width),
  Numbers negate(1: Numbers numbers),
  oneway void log_event(1: string event, 2: Color color),
  i32 crash(1: string why),
}

// What a newer client knows: a method the server (an Inventory) does not have.
service InventoryV2 extends Inventory {
  i32 restock(1: i64 id, 2: i32 amount),
}
