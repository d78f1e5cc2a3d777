--
-- PostgreSQL database dump
--

\restrict SzKMVR2pQiS7uTGJjPAu6aSpTEM0ylGlYuDeAos6VUvxpQ3D7DdPkRc2P3e0NnP

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Data for Name: users; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.users OVERRIDING SYSTEM VALUE VALUES (2, 'uma@fixture.test', 'Uma User', '$argon2id$v=19$m=65536,t=3,p=2$OiWFNDYy5EvMorPTEXXAVw$WIZJrGkpyAzBePmsUqVnB2tu2FB9JnU7GATQsrUh6qM', 'user', '2026-12-03 05:11:54.75786+00', NULL, '2026-12-03 05:11:54.64139+00', '2026-12-03 05:11:54.75786+00', '', '2026-12-03 05:11:54.759796+00');
INSERT INTO public.users OVERRIDING SYSTEM VALUE VALUES (1, 'ada@fixture.test', 'Ada Admin', '$argon2id$v=19$m=65536,t=3,p=2$xgeRU9bHMjpGE8UOnjE4qg$xwfXDC5p05fKAx76racC0yW7oPeCHXSRwzBlbX90wJ8', 'admin', '2026-12-03 05:11:53.816894+00', NULL, '2026-12-03 05:11:53.816716+00', '2026-12-03 05:11:53.816716+00', '', '2026-12-03 05:12:00.942534+00');


--
-- Data for Name: api_keys; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.api_keys OVERRIDING SYSTEM VALUE VALUES (1, 2, 'ci', 'kbn_77mlfghb', 'd2a671c3cf1cb8366930fdc49c8ffbf211592c57de79ebf49ab8d152d6154904', NULL, NULL, '2026-12-03 05:11:54.768883+00', NULL);


--
-- Data for Name: audit_events; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (1, NULL, 'cli', 'admin.create_via_cli', 'user', '1', '', '', '{"email": "ada@fixture.test"}', '2026-12-03 05:11:53.816716+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (2, 2, 'uma@fixture.test', 'user.signup', 'user', '2', '127.0.0.1', 'Go-http-client/1.1', '{}', '2026-12-03 05:11:54.64139+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (3, 2, 'uma@fixture.test', 'user.verify_email', 'user', '2', '127.0.0.1', 'Go-http-client/1.1', '{}', '2026-12-03 05:11:54.75786+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (4, 2, 'uma@fixture.test', 'user.sign_in', 'user', '2', '127.0.0.1', 'Go-http-client/1.1', '{"method": "email_code"}', '2026-12-03 05:11:54.759796+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (5, 2, 'uma@fixture.test', 'api_key.create', 'api_key', '1', '127.0.0.1', 'Go-http-client/1.1', '{"name": "ci", "prefix": "kbn_77mlfghb"}', '2026-12-03 05:11:54.768883+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (6, 2, 'uma@fixture.test', 'cluster.create', 'cluster', '1', '127.0.0.1', 'Go-http-client/1.1', '{"name": "web", "generation": 1, "kubernetes_version": "v1.34.0", "public_access_mode": "nodeport"}', '2026-12-03 05:11:55.358715+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (7, 2, 'uma@fixture.test', 'cluster.create', 'cluster', '2', '127.0.0.1', 'Go-http-client/1.1', '{"name": "db", "generation": 1, "kubernetes_version": "v1.33.4", "public_access_mode": "loadbalancer"}', '2026-12-03 05:11:55.414697+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (8, 2, 'uma@fixture.test', 'cluster.create', 'cluster', '3', '127.0.0.1', 'Go-http-client/1.1', '{"name": "old", "generation": 1, "kubernetes_version": "v1.34.0", "public_access_mode": "nodeport"}', '2026-12-03 05:11:55.457446+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (9, 2, 'uma@fixture.test', 'cluster.delete', 'cluster', '3', '127.0.0.1', 'Go-http-client/1.1', '{"name": "old", "generation": 2, "kubernetes_version": "v1.34.0", "public_access_mode": "nodeport"}', '2026-12-03 05:11:55.466477+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (10, 2, 'uma@fixture.test', 'join_token.create', 'join_token', '1', '127.0.0.1', 'Go-http-client/1.1', '{"lifetime": "24h", "max_uses": 0, "token_id": "8o2q5d", "cluster_id": 1}', '2026-12-03 05:12:00.655398+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (11, 2, 'uma@fixture.test', 'join_token.create', 'join_token', '2', '127.0.0.1', 'Go-http-client/1.1', '{"lifetime": "24h", "max_uses": 0, "token_id": "oubs7y", "cluster_id": 1}', '2026-12-03 05:12:00.667719+00');
INSERT INTO public.audit_events OVERRIDING SYSTEM VALUE VALUES (12, 1, 'ada@fixture.test', 'user.sign_in', 'user', '1', '127.0.0.1', 'Go-http-client/1.1', '{"method": "password"}', '2026-12-03 05:12:00.942534+00');


--
-- Data for Name: branding_logo; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: clusters; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.clusters OVERRIDING SYSTEM VALUE VALUES (3, 2, 'old', 'old-sc15iv', 'old cluster', 'v1.34.0', 'nodeport', 30085, 2, 0, 'deleting', '', '', '2026-12-03 05:11:55.466477+00', NULL, NULL, NULL, '2026-12-03 05:11:55.457446+00', '2026-12-03 05:11:55.466477+00', 30086, NULL, NULL, false, '', NULL, '', false, '', '10.128.32.0/20', true, NULL, NULL, NULL);
INSERT INTO public.clusters OVERRIDING SYSTEM VALUE VALUES (2, 2, 'db', 'db-as8nao', 'db cluster', 'v1.33.4', 'loadbalancer', NULL, 1, 0, 'failed', 'install vcluster: timed out', '', NULL, NULL, NULL, NULL, '2026-12-03 05:11:55.414697+00', '2026-12-03 05:11:55.474334+00', NULL, NULL, NULL, false, '', NULL, '', false, '', '10.128.16.0/20', true, NULL, NULL, NULL);
INSERT INTO public.clusters OVERRIDING SYSTEM VALUE VALUES (1, 2, 'web', 'web-ygn5da', 'web cluster', 'v1.34.0', 'nodeport', 30062, 1, 1, 'ready', '', 'web-ygn5da.clusters.test', NULL, NULL, '2026-12-03 05:11:55.482502+00', NULL, '2026-12-03 05:11:55.358715+00', '2026-12-03 05:11:55.482502+00', 30063, NULL, NULL, false, '', NULL, '', false, '', '10.128.0.0/20', true, NULL, NULL, NULL);


--
-- Data for Name: cluster_checks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.cluster_checks VALUES (1, 'dns_record', '2026-12-03 05:11:55.385539+00', 0, NULL, '', NULL);
INSERT INTO public.cluster_checks VALUES (2, 'dns_record', '2026-12-03 05:11:55.425349+00', 0, NULL, '', NULL);
INSERT INTO public.cluster_checks VALUES (3, 'dns_record', '2026-12-03 05:11:55.460332+00', 0, NULL, '', NULL);
INSERT INTO public.cluster_checks VALUES (1, 'join_token_sync', '2026-12-03 05:12:00.656674+00', 0, NULL, '', NULL);


--
-- Data for Name: cluster_dns; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: cluster_events; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.cluster_events OVERRIDING SYSTEM VALUE VALUES (1, 1, 'info', 'Created', '', '2026-12-03 05:11:55.358715+00');
INSERT INTO public.cluster_events OVERRIDING SYSTEM VALUE VALUES (2, 2, 'info', 'Created', '', '2026-12-03 05:11:55.414697+00');
INSERT INTO public.cluster_events OVERRIDING SYSTEM VALUE VALUES (3, 3, 'info', 'Created', '', '2026-12-03 05:11:55.457446+00');
INSERT INTO public.cluster_events OVERRIDING SYSTEM VALUE VALUES (4, 3, 'info', 'DeleteRequested', '', '2026-12-03 05:11:55.466477+00');


--
-- Data for Name: cluster_hostnames; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: cluster_ingress; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: cluster_metric_alerts; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: cluster_metric_counters; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: cluster_metric_rollups; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: edge_tokens; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: edge_instances; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: email_codes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.email_codes OVERRIDING SYSTEM VALUE VALUES (1, 2, 'signup', 'd6541d57561c464bf886d1a5cbe5af9fd4f7ba88f0b4217d4c41477734eddedc', '', 0, '2026-12-03 05:21:54.675606+00', '2026-12-03 05:11:54.75786+00', '2026-12-03 05:11:54.64139+00');


--
-- Data for Name: host_nodes; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: invitations; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: join_tokens; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.join_tokens OVERRIDING SYSTEM VALUE VALUES (1, 1, '8o2q5d', 'c3d7336b75639d1b1bf18663a52ab2613826a0bc74b58a12a4d78f057edb5e77', 'YJGAi6m/GYBZqsgRyrJhhAU8otewMKRh1GPkgGMTL0VbR/OmMpTkDsLKMejNc768XLNU', 'rack 1', '2026-12-04 05:12:00.639936+00', NULL, 0, NULL, NULL, '2026-12-03 05:12:00.655398+00');
INSERT INTO public.join_tokens OVERRIDING SYSTEM VALUE VALUES (2, 1, 'oubs7y', '905bf46c7f6290bb29e7b7217c0792ec097aafb112cfdf672fc3ffad9e290145', 'MoMDrCQbMYvOcRe9iVm+3k8c6Q4EE4ywqaZxwiEOzGnmVySs4MJh+O7QPMrJJp6JSfOf', 'rack 2', '2026-12-04 05:12:00.66146+00', NULL, 0, NULL, NULL, '2026-12-03 05:12:00.667719+00');


--
-- Data for Name: join_events; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: join_token_nodes; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: node_operations; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: notifications; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.notifications OVERRIDING SYSTEM VALUE VALUES (1, 2, 'node_not_ready', 'Node node-2 is not ready', 'In cluster web.', '2026-12-03 05:12:00.675122+00', NULL, '', '{}');


--
-- Data for Name: nodes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.nodes VALUES (1, 'node-1', true, '[]', '', '[]', '2026-12-03 05:12:00.670432+00', NULL, NULL, NULL, '{}', '', '', false, NULL, DEFAULT, DEFAULT, DEFAULT, false, '', NULL);
INSERT INTO public.nodes VALUES (1, 'node-2', false, '[]', '', '[]', '2026-12-03 05:12:00.670432+00', NULL, NULL, NULL, '{}', '', '', false, NULL, DEFAULT, DEFAULT, DEFAULT, false, '', NULL);


--
-- Data for Name: notification_preferences; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: oauth_identities; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: plans; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.plans OVERRIDING SYSTEM VALUE VALUES (1, 'free', 3, 10, true, '2026-12-03 05:11:52.401832+00', '', '', '', 10, true, 'USD', 0, 0, true, 0, NULL, '2026-12-03 05:11:52.625175+00');


--
-- Data for Name: orders; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: order_events; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: rate_limits; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.rate_limits VALUES ('signup-ip:127.0.0.1', '2026-12-03 05:00:00+00', 1);
INSERT INTO public.rate_limits VALUES ('verify-ip:127.0.0.1', '2026-12-03 05:00:00+00', 1);
INSERT INTO public.rate_limits VALUES ('signin-ip:127.0.0.1', '2026-12-03 05:00:00+00', 1);


--
-- Data for Name: river_job; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.river_job VALUES (2, 'available', 0, 10, NULL, '2026-12-03 05:11:54.76132+00', NULL, '2026-12-03 05:11:54.76132+00', 1, '{"to": "uma@fixture.test", "lang": "", "sealed": "cwvaaX9A+m0NGKh/z4+lrZDUtfURI3yVnZphiCMXbxX6vvQjm/zWOEqot2KlXqxQvG/e0zStSZ1cJaf53SoegJkGklhIwg4UM/Zo5LXBpg1eaHPtyxaHb6m08suaIT3vicaUsdedIb0/DNAUHJ49QGEz5b5u+PeyOtRCqY8z0Q", "template": "NewSignIn"}', NULL, NULL, 'email', '{}', 'email', '{}', NULL, NULL);
INSERT INTO public.river_job VALUES (1, 'completed', 1, 10, '2026-12-03 05:11:54.698234+00', '2026-12-03 05:11:54.685321+00', '2026-12-03 05:11:54.710265+00', '2026-12-03 05:11:54.685321+00', 1, '{"to": "uma@fixture.test", "lang": "en", "sealed": "SBfsyIQ33jOpneEf8VW9anU36Q03oPcwWwQoTl+ZE345rrx5J7QsOCNxmZBE+atWev/qRcDIdQDSg6M5/FGwdO14xHwWli6nS1AJMw", "template": "SignupCode"}', '{vm_2026_12_03T05_11_52_800031}', NULL, 'email', '{}', 'email', '{}', NULL, NULL);
INSERT INTO public.river_job VALUES (3, 'available', 0, 25, NULL, '2026-12-03 05:11:55.390929+00', NULL, '2026-12-03 05:11:55.390929+00', 1, '{"cluster_id": 1}', NULL, NULL, 'cluster_reconcile', '{}', 'clusters', '{}', NULL, NULL);
INSERT INTO public.river_job VALUES (4, 'available', 0, 25, NULL, '2026-12-03 05:11:55.439947+00', NULL, '2026-12-03 05:11:55.439947+00', 1, '{"cluster_id": 2}', NULL, NULL, 'cluster_reconcile', '{}', 'clusters', '{}', NULL, NULL);
INSERT INTO public.river_job VALUES (5, 'available', 0, 25, NULL, '2026-12-03 05:11:55.461212+00', NULL, '2026-12-03 05:11:55.461212+00', 1, '{"cluster_id": 3}', NULL, NULL, 'cluster_reconcile', '{}', 'clusters', '{}', NULL, NULL);
INSERT INTO public.river_job VALUES (6, 'available', 0, 25, NULL, '2026-12-03 05:11:55.468174+00', NULL, '2026-12-03 05:11:55.468174+00', 1, '{"cluster_id": 3}', NULL, NULL, 'cluster_reconcile', '{}', 'clusters', '{}', NULL, NULL);
INSERT INTO public.river_job VALUES (7, 'available', 0, 10, NULL, '2026-12-03 05:12:00.944818+00', NULL, '2026-12-03 05:12:00.944818+00', 1, '{"to": "ada@fixture.test", "lang": "", "sealed": "ZfyXwdW1htij26/PgDFjkTOLov2auuHpFhIfKlXkTAC4r9v/eP5V0HKp5fLKA9SdkPwsdhtxnHDffhsj74hU0uuyxf4Hh1PCLMVtD7OIlyi3uv8phHM/E2qigtifzW7lNUWFx9YBq3ZgfWTDNT5HGbSJPrIBKOjR5RIvR6UlZ70", "template": "NewSignIn"}', NULL, NULL, 'email', '{}', 'email', '{}', NULL, NULL);


--
-- Data for Name: river_leader; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: river_notification; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: river_queue; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.river_queue VALUES ('email', '2026-12-03 05:11:52.829002+00', '{}', NULL, '2026-12-03 05:11:52.829002+00');
INSERT INTO public.river_queue VALUES ('default', '2026-12-03 05:11:52.863677+00', '{}', NULL, '2026-12-03 05:11:52.863677+00');
INSERT INTO public.river_queue VALUES ('clusters', '2026-12-03 05:11:52.868458+00', '{}', NULL, '2026-12-03 05:11:52.868458+00');
INSERT INTO public.river_queue VALUES ('checks', '2026-12-03 05:11:52.879595+00', '{}', NULL, '2026-12-03 05:11:52.879595+00');
INSERT INTO public.river_queue VALUES ('webhook', '2026-12-03 05:11:52.881857+00', '{}', NULL, '2026-12-03 05:11:52.881857+00');


--
-- Data for Name: route_agents; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: sessions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.sessions VALUES ('b983c890e68673b9c3cba65a9814b64793002276e44fb5f8f8a520e7d013a8b1', '\x7b2264223a22323032362d31322d31375430353a31313a35342e3735393737353437315a222c2276223a7b2263737266223a2255574e5337444855594649574d49443553563251585a5448534c222c22666c617368223a22466c6173684a6f696e546f6b656e43726561746564222c227365656e223a313739363237343731332c22736964223a224c5a535657365a4e4335454e535556584e524156514c34524451227d7d', '2026-12-06 05:12:00.668566+00', 'LZSVW6ZNC5ENSUVXNRAVQL4RDQ', '2026-12-03 05:12:00.668598+00');
INSERT INTO public.sessions VALUES ('12acf54bd90dd60743b2a67bf09dd5c1ecec0694a3fed4f1453105b96271aad4', '\x7b2264223a22323032362d31322d31375430353a31323a30302e39343235303334395a222c2276223a7b2263737266223a22325a593559464f4b36565356464448464635554d48494a4c4834222c227365656e223a313739363237343732302c22736964223a224c5a324d59433735565245334e41554a4d474a52523258525344227d7d', '2026-12-06 05:12:00.947244+00', 'LZ2MYC75VRE3NAUJMGJRR2XRSD', '2026-12-03 05:12:00.947303+00');


--
-- Data for Name: settings; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.settings VALUES ('runtime', '{"podCIDR": "10.244.0.0/16", "chartPath": "", "chartRepo": "https://charts.loft.sh", "consoleHost": "", "nodePortMax": 30099, "nodePortMin": 30000, "podCIDRPool": "10.128.0.0/9", "serviceCIDR": "10.96.0.0/16", "chartVersion": "0.30.0", "platformHost": "", "podCIDRBlock": 20, "apiBaseDomain": "clusters.test", "consoleBackend": "", "allowedVersions": ["v1.34.0", "v1.33.4"], "edgeAddressType": "InternalIP", "platformProject": "", "platformInsecure": false, "defaultAccessMode": "nodeport"}', true, '2026-12-03 05:11:53.117271+00');


--
-- Data for Name: subscriptions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.subscriptions VALUES (1, 1, 'active', NULL, NULL, '2026-12-03 05:11:53.816716+00', NULL, 0, 'USD', false, NULL, NULL, NULL, '2026-12-03 05:11:53.816716+00');
INSERT INTO public.subscriptions VALUES (2, 1, 'active', NULL, NULL, '2026-12-03 05:11:54.64139+00', NULL, 0, 'USD', false, NULL, NULL, NULL, '2026-12-03 05:11:54.64139+00');


--
-- Data for Name: user_avatars; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: user_sessions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.user_sessions VALUES ('LZSVW6ZNC5ENSUVXNRAVQL4RDQ', 2, '127.0.0.1', 'Go-http-client/1.1', '2026-12-03 05:11:54.759796+00', '2026-12-03 05:11:54.759796+00', NULL);
INSERT INTO public.user_sessions VALUES ('LZ2MYC75VRE3NAUJMGJRR2XRSD', 1, '127.0.0.1', 'Go-http-client/1.1', '2026-12-03 05:12:00.942534+00', '2026-12-03 05:12:00.942534+00', NULL);


--
-- Data for Name: webhook_channels; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: webhook_attempts; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Name: api_keys_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.api_keys_id_seq', 1, true);


--
-- Name: audit_events_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.audit_events_id_seq', 12, true);


--
-- Name: cluster_events_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.cluster_events_id_seq', 4, true);


--
-- Name: cluster_hostnames_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.cluster_hostnames_id_seq', 1, false);


--
-- Name: clusters_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.clusters_id_seq', 3, true);


--
-- Name: edge_instances_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.edge_instances_id_seq', 1, false);


--
-- Name: edge_tokens_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.edge_tokens_id_seq', 1, false);


--
-- Name: email_codes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.email_codes_id_seq', 1, true);


--
-- Name: invitations_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.invitations_id_seq', 1, false);


--
-- Name: join_events_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.join_events_id_seq', 1, false);


--
-- Name: join_tokens_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.join_tokens_id_seq', 2, true);


--
-- Name: node_operations_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.node_operations_id_seq', 1, false);


--
-- Name: notifications_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.notifications_id_seq', 1, true);


--
-- Name: oauth_identities_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.oauth_identities_id_seq', 1, false);


--
-- Name: order_events_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.order_events_id_seq', 1, false);


--
-- Name: order_number_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.order_number_seq', 1, false);


--
-- Name: orders_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.orders_id_seq', 1, false);


--
-- Name: plans_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.plans_id_seq', 1, true);


--
-- Name: river_job_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.river_job_id_seq', 7, true);


--
-- Name: river_notification_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.river_notification_id_seq', 1, false);


--
-- Name: route_agents_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.route_agents_id_seq', 1, false);


--
-- Name: users_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.users_id_seq', 2, true);


--
-- Name: webhook_attempts_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.webhook_attempts_id_seq', 1, false);


--
-- Name: webhook_channels_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.webhook_channels_id_seq', 1, false);


--
-- PostgreSQL database dump complete
--

\unrestrict SzKMVR2pQiS7uTGJjPAu6aSpTEM0ylGlYuDeAos6VUvxpQ3D7DdPkRc2P3e0NnP

