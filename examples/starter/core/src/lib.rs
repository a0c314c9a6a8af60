//! Domain types of the starter shop.

/// An order as the shop sees it.
pub struct Order {
    pub id: u64,
}
