"""What the fleet keeps on the hub for a Site beyond the Site itself: each site's reporting credential
(`credentials`), the medium a Site describes read from its Secrets and ConfigMaps (`sitemedium`), and how the
fleet's own verbs reach the hub (`hubaccess`)."""
