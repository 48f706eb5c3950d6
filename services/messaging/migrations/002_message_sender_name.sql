alter table messages add column sender_name text;
