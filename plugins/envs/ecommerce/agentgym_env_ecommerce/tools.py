"""The store's tools, declared once (the instruction's list, the JSON schemas, the argument checks)."""
from __future__ import annotations

from agentgym_service.tools import Param, Tool, ToolSet

ORDER = Param("order_id", "order id such as #W1234")
ITEMS = Param("item_ids", "item ids of the order (get_order lists them)", "array")
NEW_ITEMS = Param("new_item_ids", "item ids of the new options, one per item (get_product lists them)", "array")
METHOD = Param("payment_method_id", "a payment method id of the customer (get_customer lists them)")
ADDRESS = Param("address", "street number and street, city, zip: \"12 Oak St, Springfield, 62704\"")

TOOLS = ToolSet((
    Tool("respond", "talk to the customer", (Param("message", "what to say"),), kind="respond"),
    Tool("find_customer", "authenticate the customer by email, or by name and zip; gives the customer id",
         (Param("email", "the customer's email", required=False), Param("name", "first and last name", required=False),
          Param("zip", "5-digit zip code", required=False)),
         kind="auth", usage="find_customer(email) or find_customer(name, zip)"),
    Tool("get_customer", "the authenticated customer's profile: address, payment methods, order ids",
         (Param("customer_id", "the id find_customer gave"),)),
    Tool("get_order", "an order of the authenticated customer: status, items, payment, address", (ORDER,)),
    Tool("get_product", "a product's options: item id, price, in stock", (Param("product_id", "such as P07"),)),
    Tool("search_products", "products whose name matches a word, with their ids", (Param("query", "a word such as mug"),)),
    Tool("cancel_order", "cancel a pending order", (ORDER, Param("reason", "why", enum=("no longer needed",
                                                                                        "ordered by mistake"))),
         kind="write"),
    Tool("modify_address", "change the shipping address of a pending order", (ORDER, ADDRESS), kind="write"),
    Tool("modify_payment", "pay a pending order with another payment method", (ORDER, METHOD), kind="write"),
    Tool("modify_items", "change items of a pending order to other options of the same products",
         (ORDER, ITEMS, NEW_ITEMS, METHOD), kind="write"),
    Tool("return_items", "return delivered items; the refund goes to the payment method", (ORDER, ITEMS, METHOD),
         kind="write"),
    Tool("exchange_items", "exchange delivered items for other options of the same products",
         (ORDER, ITEMS, NEW_ITEMS, METHOD), kind="write"),
    Tool("modify_customer_address", "change the customer's default address (their profile, not an order's)",
         (Param("customer_id", "the id find_customer gave"), ADDRESS), kind="write"),
    Tool("transfer_to_human", "hand the customer to a human agent; ends the conversation",
         (Param("summary", "what the customer needs"),), kind="end"),
))
