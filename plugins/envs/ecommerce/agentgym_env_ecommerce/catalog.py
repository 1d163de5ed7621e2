"""The store's products: fixed product types, with variants (item ids, prices, stock) drawn from a seed.

A product has option axes (``color``, ``size``, ...); each combination of option values is
a variant with its own item id and price. Prices of one product's variants all differ, so
an exchange always has a non-zero price difference to tell the customer. Some products are
final sale (never returned or exchanged).
"""
from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass

#: (name, option axes, price range, final sale)
PRODUCT_TYPES: tuple[tuple[str, dict[str, tuple[str, ...]], tuple[int, int], bool], ...] = (
    ("T-Shirt", {"color": ("black", "white", "blue", "red"), "size": ("S", "M", "L", "XL")}, (15, 35), False),
    ("Running Shoes", {"color": ("black", "white", "grey"), "size": ("8", "9", "10", "11")}, (60, 140), False),
    ("Water Bottle", {"capacity": ("500ml", "750ml", "1000ml"), "color": ("green", "blue", "black")}, (10, 30), False),
    ("Backpack", {"color": ("black", "navy", "olive"), "size": ("small", "medium", "large")}, (35, 90), False),
    ("Desk Lamp", {"color": ("white", "black"), "bulb": ("LED", "halogen")}, (25, 60), False),
    ("Earbuds", {"color": ("black", "silver", "pink"), "type": ("wired", "wireless")}, (30, 150), True),
    ("Coffee Mug", {"material": ("ceramic", "glass", "steel"), "capacity": ("300ml", "450ml")}, (8, 25), False),
    ("Jacket", {"color": ("black", "navy", "red"), "size": ("S", "M", "L", "XL")}, (60, 160), False),
    ("Yoga Mat", {"color": ("purple", "blue", "green"), "thickness": ("4mm", "6mm")}, (20, 45), False),
    ("Phone Case", {"model": ("A12", "A13", "A14"), "color": ("clear", "black")}, (10, 25), True),
    ("Notebook", {"size": ("A5", "A4"), "paper": ("lined", "dotted", "blank")}, (5, 15), False),
    ("Umbrella", {"color": ("black", "yellow"), "size": ("compact", "large")}, (15, 35), False),
    ("Swimsuit", {"size": ("S", "M", "L"), "color": ("blue", "black")}, (25, 60), True),
)


@dataclass(frozen=True)
class Variant:
    item_id: str
    product_id: str
    options: tuple[tuple[str, str], ...]  # (axis, value) in the product's axis order
    price: float
    available: bool

    def option_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.options)


@dataclass(frozen=True)
class Product:
    product_id: str
    name: str
    axes: tuple[str, ...]
    final_sale: bool
    variants: tuple[Variant, ...]

    def variant(self, options: dict[str, str]) -> Variant | None:
        want = tuple((axis, options[axis]) for axis in self.axes)
        return next((v for v in self.variants if v.options == want), None)


@dataclass(frozen=True)
class Catalog:
    products: tuple[Product, ...]

    @functools.cached_property
    def by_item(self) -> dict[str, Variant]:
        return {v.item_id: v for p in self.products for v in p.variants}

    @functools.cached_property
    def by_product(self) -> dict[str, Product]:
        return {p.product_id: p for p in self.products}

    def product_of(self, item_id: str) -> Product:
        return self.by_product[self.by_item[item_id].product_id]


@functools.lru_cache(maxsize=8)
def catalog(store_seed: int = 0) -> Catalog:
    """The products of the store drawn from *store_seed* (item ids, prices, what is out of stock)."""
    rng = random.Random(f"ecommerce-catalog:{store_seed}")
    ids = iter(rng.sample(range(100000, 1000000), 400))
    products = []
    for index, (name, axes, (low, high), final_sale) in enumerate(PRODUCT_TYPES, 1):
        product_id = f"P{index:02d}"
        combos = list(itertools.product(*axes.values()))
        base = rng.uniform(low, high)
        steps = rng.sample(range(-30, 31), len(combos))  # distinct: every variant has its own price
        variants = tuple(
            Variant(item_id=str(next(ids)), product_id=product_id, options=tuple(zip(axes, combo)),
                    price=round(base * (1 + step / 100), 2), available=rng.random() > 0.2)
            for combo, step in zip(combos, steps)
        )
        products.append(Product(product_id, name, tuple(axes), final_sale, variants))
    return Catalog(tuple(products))


def money(amount: float) -> str:
    """``$12.50``: how amounts are written to the agent and expected back from it."""
    return f"${amount:.2f}"
