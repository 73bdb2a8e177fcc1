"""From an inventory and one template to site-configs: the inventory read with each value's place (`inventory`), the
template filled per row (`template`), the site directories on disk (`tree`) and as hub objects (`sites`)."""
