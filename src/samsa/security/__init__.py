"""Who may connect and what they may do: authentication (TLS, SASL) and authorization (ACLs), as Kafka has them."""
